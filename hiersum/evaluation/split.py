"""Decoding a split with a trained model and scoring it against the references and a lead baseline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torchmetrics.classification import MulticlassAccuracy
from torchmetrics.text import Perplexity

from hiersum.config import DecodeConfig
from hiersum.data.schema import IGNORE_INDEX, EncodedExample, Example
from hiersum.data.sentences import SENTENCE_SPLITTER
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.evaluation.machine import machine_description
from hiersum.evaluation.report import library_versions
from hiersum.evaluation.scoring import ScoringConfig, score_split
from hiersum.inference.batched import iter_batches, progress_bar, summarize_encoded
from hiersum.model.encoder_registry import batch_layout
from hiersum.model.summarizer import HierSum


@dataclass
class SplitEvaluation:
    """What :func:`evaluate_split` returns: everything :func:`hiersum.evaluation.report.write_report` writes."""

    metrics: dict[str, Any]
    """Corpus-level figures per system, with intervals (``metrics.json``)."""
    predictions: list[dict[str, Any]]
    """:func:`prediction_record` per example, in order (``predictions.jsonl``)."""
    rows: list[dict[str, Any]]
    """Per-example figures of every system (``scores.csv``)."""


def prediction_record(example: Example, summary: str) -> dict[str, Any]:
    """One line of ``predictions.jsonl``: ``{"id", "summary", "reference"}``, the first reference, and with more than
    one (AESLC's four) ``"references"``, all of them, as ``hiersum evaluate`` scores them."""
    record: dict[str, Any] = {"id": example.id, "summary": summary, "reference": example.references[0]}
    if len(example.references) > 1:
        record["references"] = list(example.references)
    return record


@torch.inference_mode()
def reference_token_scores(
    model: HierSum, encoded: Sequence[EncodedExample], tokenizer: SubwordTokenizer, *,
    batch_tokens: int, device: torch.device | str = "cpu",
) -> dict[str, float]:
    """Teacher-forced scores of the references (with EOS) under the model (torchmetrics):
    ``perplexity`` = exp(mean token NLL) and ``token_accuracy`` = % of reference tokens that are the
    model's most probable next token. With ``model.copy_oov`` a batch's mixture is V + K wide (K: its own extended
    ids); the accuracy counts over V plus the most extended ids of any example."""
    # computed by one process (rank 0 after a DDP fit, whose other ranks have returned): no sync on compute
    perplexity = Perplexity(ignore_index=IGNORE_INDEX, sync_on_compute=False).to(device)
    n_classes = model.vocab_size + max((len(example.oov_words) for example in encoded), default=0)
    accuracy = MulticlassAccuracy(num_classes=n_classes, average="micro", ignore_index=IGNORE_INDEX,
                                  sync_on_compute=False).to(device)
    model.eval().to(device)
    for _, batch in iter_batches(encoded, tokenizer, batch_tokens=batch_tokens, max_batch_size=64,
                                 flat=batch_layout(model.config, tokenizer)):
        batch.to(device)
        log_probs = model(batch.src, batch.src_mask, batch.tgt_in,
                          paragraph_graph=batch.paragraph_graph).log_probs  # (B, S, V)
        labels = batch.target_labels()
        perplexity.update(log_probs, labels)
        accuracy.update(log_probs.argmax(-1).flatten(), labels.flatten())  # the most probable ids
    return {"perplexity": float(perplexity.compute()),
            "token_accuracy": 100.0 * float(accuracy.compute()) if encoded else 0.0}


def decode_split(
    model: HierSum, encoded: Sequence[EncodedExample], tokenizer: SubwordTokenizer, decode: DecodeConfig, *,
    split: str, batch_tokens: int, device: torch.device | str = "cpu",
) -> list[str]:
    """The model's summary of each of ``encoded``, in order (with a progress bar)."""
    summaries: list[str] = [""] * len(encoded)
    with progress_bar(f"decoding {split}") as bar:
        task = bar.add_task("decode", total=len(encoded))
        for indices, batch_summaries in summarize_encoded(
            model, encoded, tokenizer, decode, batch_tokens=batch_tokens, device=device
        ):
            for index, summary in zip(indices, batch_summaries, strict=True):
                summaries[index] = summary.summary
            bar.advance(task, len(indices))
    return summaries


def evaluate_split(
    model: HierSum,
    examples: Sequence[Example],
    encoded: Sequence[EncodedExample],
    tokenizer: SubwordTokenizer,
    decode: DecodeConfig,
    *,
    split: str,
    batch_tokens: int,
    device: torch.device | str = "cpu",
    scoring: ScoringConfig | None = None,
) -> SplitEvaluation:
    """Decode ``encoded`` and score the model and the baselines of ``scoring`` (default: lead,
    oracle, lexrank, 1000 bootstrap resamples).

    ``metrics`` = ``{split: {"model": {...}, "lead": {...}, "oracle": {...}, "lexrank": {...}},
    "n_examples": N, "decode": {...}, "sentence_splitter": "nltk.punkt", ...}`` (keys of a system:
    :mod:`hiersum.evaluation.scoring`).
    """
    predictions = decode_split(model, encoded, tokenizer, decode, split=split, batch_tokens=batch_tokens,
                               device=device)
    scored = score_split(examples, {"model": predictions}, scoring)
    scored.systems["model"].update(
        reference_token_scores(model, encoded, tokenizer, batch_tokens=batch_tokens, device=device)
    )
    metrics = {
        split: scored.systems,
        "n_examples": len(encoded),
        "decode": asdict(decode),
        "sentence_splitter": SENTENCE_SPLITTER,
        "versions": library_versions(),
        "machine": machine_description(),
    }
    records = [prediction_record(example, summary) for example, summary in zip(examples, predictions, strict=True)]
    return SplitEvaluation(metrics=metrics, predictions=records, rows=scored.rows)
