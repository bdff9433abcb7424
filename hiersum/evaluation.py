"""Decoding a split with a trained model and scoring it against the references and a lead baseline."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

import torch
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text
from torchmetrics.classification import MulticlassAccuracy
from torchmetrics.text import Perplexity

from hiersum.attention import top_paragraphs
from hiersum.config import DecodeConfig
from hiersum.data.batching import FlatLayout, collate, flat_layout, make_token_budget_batches
from hiersum.data.schema import Batch, EncodedExample, Example
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.lit_module import HierSumModule, target_labels
from hiersum.report import library_versions
from hiersum.scoring import ScoringConfig, score_split

PRECISIONS: dict[str, torch.dtype | None] = {"32": None, "bf16": torch.bfloat16, "16": torch.float16}
"""``precision`` values: float32, or the autocast dtype."""


@dataclass(frozen=True)
class Summary:
    id: str
    summary: str
    score: float
    n_best: list[tuple[str, float]] = field(default_factory=list)
    """(summary, score) of the best hypotheses, best first (the first is ``summary``)."""
    top_paragraphs: list[tuple[int, int, float]] | None = None
    """(document index, paragraph index, weight) of the most attended paragraphs (document -1 is
    the title), when asked for; see :func:`hiersum.attention.top_paragraphs`."""


class ExamplesPerSecond(ProgressColumn):
    """The progress rate in examples per second."""

    def render(self, task: Task) -> Text:
        return Text(f"{task.speed or 0.0:.2f} ex/s")


def progress_bar(description: str) -> Progress:
    """A rich progress bar on stderr with a count, examples/s and ETA; silent when stderr is not a terminal."""
    return Progress(
        TextColumn(description), BarColumn(), MofNCompleteColumn(), ExamplesPerSecond(), TimeRemainingColumn(),
        console=Console(stderr=True), disable=not sys.stderr.isatty(),
    )


def generate_kwargs(decode: DecodeConfig) -> dict[str, Any]:
    """The keyword arguments of ``HierSum.generate`` that ``decode`` sets."""
    return dict(
        beam_size=decode.beam_size, alpha=decode.alpha, min_length=decode.min_length,
        max_length=decode.max_length, stopping=decode.stopping, no_repeat_ngram_size=decode.no_repeat_ngram_size,
        n_best=decode.n_best, greedy=decode.greedy, max_steps=decode.max_steps,
    )


def autocast(device: torch.device | str, precision: str) -> contextlib.AbstractContextManager:
    """Autocast to ``precision`` ("32", "bf16" or "16") on ``device``; "32" does nothing."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, found {precision!r}")
    dtype = PRECISIONS[precision]
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=dtype)


def iter_batches(
    encoded: Sequence[EncodedExample], tokenizer: SubwordTokenizer, *, batch_tokens: int, max_batch_size: int,
    flat: FlatLayout | None = None,
) -> Iterator[tuple[list[int], Batch]]:
    """(indices into ``encoded``, padded batch), grouped by size under a token budget; ``flat``: the
    source layout of a flat model (:func:`hiersum.data.batching.flat_layout`), None for the grid."""
    special = tokenizer.special
    make = partial(collate, pad_id=special.pad, bos_id=special.bos, eos_id=special.eos, flat=flat)
    for indices in make_token_budget_batches(encoded, batch_tokens=batch_tokens, max_batch_size=max_batch_size):
        yield indices, make([encoded[i] for i in indices])


@torch.inference_mode()
def summarize_encoded(
    module: HierSumModule,
    encoded: Sequence[EncodedExample],
    tokenizer: SubwordTokenizer,
    decode: DecodeConfig,
    *,
    batch_tokens: int,
    device: torch.device | str = "cpu",
    precision: str = "32",
    attention_top_k: int = 0,
) -> Iterator[tuple[list[int], list[Summary]]]:
    """Decode every example; yields (indices, summaries) batch by batch (sorted by size).

    ``precision``: "32", or "bf16" / "16" to run under autocast. ``attention_top_k`` > 0 adds each
    example's most attended paragraphs (hierarchical models; costs one more encoder pass).
    """
    module.eval().to(device)
    for indices, batch in iter_batches(encoded, tokenizer, batch_tokens=batch_tokens,
                                       max_batch_size=decode.batch_size,
                                       flat=flat_layout(module.model_config, tokenizer)):
        batch.to(device)
        with autocast(device, precision):
            output = module.model.generate(
                batch.src, batch.src_mask, paragraph_graph=batch.paragraph_graph, **generate_kwargs(decode)
            )
        ranked = [None] * len(batch) if not attention_top_k else most_attended(
            module, batch, attention_top_k, device=device, precision=precision
        )
        yield indices, [
            Summary(
                id=batch.ids[i], summary=tokenizer.decode(hypotheses[0].tokens), score=float(hypotheses[0].score),
                n_best=[(tokenizer.decode(h.tokens), float(h.score)) for h in hypotheses], top_paragraphs=ranked[i],
            )
            for i, hypotheses in enumerate(output.n_best)
        ]


def most_attended(
    module: HierSumModule, batch: Batch, k: int, *, device: torch.device | str, precision: str
) -> list[list[tuple[int, int, float]]]:
    """The ``k`` most attended paragraphs of each example of ``batch`` (hierarchical models only)."""
    if module.model_config.encoder != "hierarchical":
        raise ValueError("attention inspection needs a hierarchical model; this checkpoint is flat")
    with autocast(device, precision):
        encoded = module.model.encode(
            batch.src, batch.src_mask, paragraph_graph=batch.paragraph_graph, return_attention=True
        )
    return top_paragraphs(encoded, [source.provenance for source in batch.sources], k)


@torch.inference_mode()
def reference_token_scores(
    module: HierSumModule, encoded: Sequence[EncodedExample], tokenizer: SubwordTokenizer, *,
    batch_tokens: int, device: torch.device | str = "cpu",
) -> dict[str, float]:
    """Teacher-forced scores of the references (with EOS) under the model (torchmetrics):
    ``perplexity`` = exp(mean token NLL) and ``token_accuracy`` = % of reference tokens that are the
    model's most probable next token."""
    perplexity = Perplexity(ignore_index=-100).to(device)
    accuracy = None
    module.eval().to(device)
    for _, batch in iter_batches(encoded, tokenizer, batch_tokens=batch_tokens, max_batch_size=64,
                                 flat=flat_layout(module.model_config, tokenizer)):
        batch.to(device)
        log_probs = module.model.log_probs(
            batch.src, batch.src_mask, batch.tgt_in, paragraph_graph=batch.paragraph_graph
        )  # (B, S, V)
        labels = target_labels(batch)
        perplexity.update(log_probs, labels)
        if accuracy is None:
            accuracy = MulticlassAccuracy(num_classes=log_probs.size(-1), average="micro", ignore_index=-100)
            accuracy = accuracy.to(device)
        accuracy.update(log_probs.flatten(0, 1), labels.flatten())
    return {"perplexity": float(perplexity.compute()),
            "token_accuracy": 100.0 * float(accuracy.compute()) if accuracy is not None else 0.0}


def reference_perplexity(
    module: HierSumModule, encoded: Sequence[EncodedExample], tokenizer: SubwordTokenizer, *,
    batch_tokens: int, device: torch.device | str = "cpu",
) -> float:
    """exp(mean token NLL) of the references (with EOS) under the model, teacher-forced."""
    return reference_token_scores(module, encoded, tokenizer, batch_tokens=batch_tokens, device=device)["perplexity"]


def decode_split(
    module: HierSumModule, encoded: Sequence[EncodedExample], tokenizer: SubwordTokenizer, decode: DecodeConfig, *,
    split: str, batch_tokens: int, device: torch.device | str = "cpu",
) -> list[str]:
    """The model's summary of each of ``encoded``, in order (with a progress bar)."""
    summaries: list[str] = [""] * len(encoded)
    with progress_bar(f"decoding {split}") as bar:
        task = bar.add_task("decode", total=len(encoded))
        for indices, batch_summaries in summarize_encoded(
            module, encoded, tokenizer, decode, batch_tokens=batch_tokens, device=device
        ):
            for index, summary in zip(indices, batch_summaries, strict=True):
                summaries[index] = summary.summary
            bar.advance(task, len(indices))
    return summaries


def evaluate_split(
    module: HierSumModule,
    examples: Sequence[Example],
    encoded: Sequence[EncodedExample],
    tokenizer: SubwordTokenizer,
    decode: DecodeConfig,
    *,
    split: str,
    batch_tokens: int,
    device: torch.device | str = "cpu",
    scoring: ScoringConfig | None = None,
) -> tuple[dict, list[dict]]:
    """Decode ``encoded``, score the model and the baselines of ``scoring`` (default: lead, oracle,
    lexrank, 1000 bootstrap resamples); return (metrics, prediction records).

    ``metrics`` = ``{split: {"model": {...}, "lead": {...}, "oracle": {...}, "lexrank": {...}},
    "n_examples": N, "decode": {...}}`` (keys of a system: :mod:`hiersum.scoring`).
    """
    predictions = decode_split(module, encoded, tokenizer, decode, split=split, batch_tokens=batch_tokens,
                               device=device)
    scored = score_split(examples, {"model": predictions}, scoring)
    scored.systems["model"].update(
        reference_token_scores(module, encoded, tokenizer, batch_tokens=batch_tokens, device=device)
    )
    metrics = {
        split: scored.systems,
        "n_examples": len(encoded),
        "decode": asdict(decode),
        "versions": library_versions(),
    }
    records = [
        {"id": example.id, "summary": prediction, "reference": example.references[0]}
        for example, prediction in zip(examples, predictions, strict=True)
    ]
    return metrics, records
