"""Decoding a split with a trained model and scoring it against the references and a lead baseline."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import partial

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from torchmetrics.text import Perplexity

from hiersum.config import DecodeConfig
from hiersum.data.batching import collate, make_token_budget_batches
from hiersum.data.schema import Batch, EncodedExample, Example
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.lit_module import HierSumModule, target_labels
from hiersum.metrics import lead_baseline, score_summaries


@dataclass(frozen=True)
class Summary:
    id: str
    summary: str
    score: float


def progress_bar(description: str) -> Progress:
    """A rich progress bar on stderr with a count and ETA; silent when stderr is not a terminal."""
    return Progress(
        TextColumn(description), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=Console(stderr=True), disable=not sys.stderr.isatty(),
    )


def iter_batches(
    encoded: Sequence[EncodedExample], tokenizer: SubwordTokenizer, *, batch_tokens: int, max_batch_size: int
) -> Iterator[tuple[list[int], Batch]]:
    """(indices into ``encoded``, padded batch), grouped by size under a token budget."""
    special = tokenizer.special
    make = partial(collate, pad_id=special.pad, bos_id=special.bos, eos_id=special.eos)
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
) -> Iterator[tuple[list[int], list[Summary]]]:
    """Beam-search every example; yields (indices, summaries) batch by batch (sorted by size)."""
    module.eval().to(device)
    for indices, batch in iter_batches(encoded, tokenizer, batch_tokens=batch_tokens,
                                       max_batch_size=decode.batch_size):
        batch.to(device)
        output = module.model.generate(
            batch.src, batch.src_mask, beam_size=decode.beam_size, alpha=decode.alpha,
            min_length=decode.min_length, max_length=decode.max_length, stopping=decode.stopping,
        )
        yield indices, [
            Summary(id=batch.ids[i], summary=tokenizer.decode(sequence), score=float(score))
            for i, (sequence, score) in enumerate(zip(output.sequences, output.scores, strict=True))
        ]


@torch.inference_mode()
def reference_perplexity(
    module: HierSumModule, encoded: Sequence[EncodedExample], tokenizer: SubwordTokenizer, *,
    batch_tokens: int, device: torch.device | str = "cpu",
) -> float:
    """exp(mean token NLL) of the references (with EOS) under the model, teacher-forced."""
    metric = Perplexity(ignore_index=-100).to(device)
    module.eval().to(device)
    for _, batch in iter_batches(encoded, tokenizer, batch_tokens=batch_tokens, max_batch_size=64):
        batch.to(device)
        metric.update(module.model.log_probs(batch.src, batch.src_mask, batch.tgt_in), target_labels(batch))
    return float(metric.compute())


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
) -> tuple[dict, list[dict]]:
    """Decode ``encoded``, score model and lead baseline; return (metrics, prediction records).

    ``metrics`` = ``{split: {"model": {...}, "lead": {...}}, "n_examples": N, "decode": {...}}``.
    """
    summaries: list[Summary | None] = [None] * len(encoded)
    with progress_bar(f"decoding {split}") as bar:
        task = bar.add_task("decode", total=len(encoded))
        for indices, batch_summaries in summarize_encoded(
            module, encoded, tokenizer, decode, batch_tokens=batch_tokens, device=device
        ):
            for index, summary in zip(indices, batch_summaries, strict=True):
                summaries[index] = summary
            bar.advance(task, len(indices))
    references = [example.references for example in examples]
    predictions = [summary.summary for summary in summaries]
    leads = [
        lead_baseline([p for document in example.documents for p in document], example.references[0])
        for example in examples
    ]
    model_scores = score_summaries(predictions, references)
    model_scores["perplexity"] = reference_perplexity(
        module, encoded, tokenizer, batch_tokens=batch_tokens, device=device
    )
    metrics = {
        split: {"model": model_scores, "lead": score_summaries(leads, references)},
        "n_examples": len(encoded),
        "decode": asdict(decode),
    }
    records = [
        {"id": example.id, "summary": prediction, "reference": example.references[0]}
        for example, prediction in zip(examples, predictions, strict=True)
    ]
    return metrics, records
