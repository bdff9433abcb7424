"""Decoding encoded examples with a trained network: padded batches under a token budget (the data stage's
collate), generation (:func:`hiersum.decoding.generate` with the decode config), text back from the tokenizer, progress.

Used by the ``summarize`` command, evaluation and the validation-ROUGE callback; imports neither Lightning
nor torchmetrics, so ``hiersum summarize`` starts quickly.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial

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

from hiersum.config import DecodeConfig
from hiersum.data.batching import FlatLayout, collate, make_token_budget_batches
from hiersum.data.schema import Batch, EncodedExample
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.decoding.attention import top_paragraphs
from hiersum.decoding.generation import generate
from hiersum.decoding.search import GiveUp
from hiersum.inference.precision import DecodingPrecision, check_weights
from hiersum.model.encoder_registry import batch_layout, encoder_spec
from hiersum.model.summarizer import HierSum


@dataclass(frozen=True)
class Summary:
    id: str
    summary: str
    score: float
    n_best: list[tuple[str, float]] = field(default_factory=list)
    """(summary, score) of the best hypotheses, best first (the first is ``summary``)."""
    top_paragraphs: list[tuple[int, int, float]] | None = None
    """(document index, paragraph index, weight) of the most attended paragraphs (document -1 is
    the title), when asked for; see :func:`hiersum.decoding.attention.top_paragraphs`."""


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


def is_out_of_memory(error: BaseException) -> bool:
    """A failed allocation: CUDA's ``OutOfMemoryError``, or the CPU allocator's ``RuntimeError``."""
    return isinstance(error, torch.cuda.OutOfMemoryError) or (
        isinstance(error, RuntimeError) and "can't allocate memory" in str(error))


def iter_batches(
    encoded: Sequence[EncodedExample], tokenizer: SubwordTokenizer, *, batch_tokens: int, max_batch_size: int,
    flat: FlatLayout | None = None,
) -> Iterator[tuple[list[int], Batch]]:
    """(indices into ``encoded``, padded batch), grouped by size under a token budget; ``flat``: the
    source layout of a flat model (:func:`hiersum.model.encoder_registry.batch_layout`), None for the grid."""
    special = tokenizer.special
    make = partial(collate, pad_id=special.pad, bos_id=special.bos, eos_id=special.eos, flat=flat)
    for indices in make_token_budget_batches(encoded, batch_tokens=batch_tokens, max_batch_size=max_batch_size):
        yield indices, make([encoded[i] for i in indices])


@torch.inference_mode()
def summarize_encoded(
    model: HierSum,
    encoded: Sequence[EncodedExample],
    tokenizer: SubwordTokenizer,
    decode: DecodeConfig,
    *,
    batch_tokens: int,
    device: torch.device | str = "cpu",
    precision: str = "32",
    attention_top_k: int = 0,
    deadlines: Sequence[float | None] | None = None,
) -> Iterator[tuple[list[int], list[Summary | None]]]:
    """Decode every example with ``model`` (moved to ``device``, eval mode); yields (indices,
    summaries) batch by batch (sorted by size).

    ``precision``: one of Lightning's (:data:`hiersum.inference.precision.PRECISIONS`: ``32``, ``bf16`` / ``16``
    under autocast, ``bf16-true``...). The model's weights must be in its dtype already (a ``ValueError``
    otherwise: :func:`hiersum.inference.load_summarizer` converts them once, this converts none); the batches'
    floating tensors are converted to it. ``attention_top_k`` > 0
    adds each example's most attended paragraphs (encoders with inter-paragraph layers; costs one more encoder
    pass). ``deadlines``: per example, a ``time.monotonic()`` past which its search stops (None: none); its
    summary is then None, and the other examples of its batch go on without it.
    """
    decoding = check_weights(model, precision)
    model.eval().to(device)
    for indices, batch in iter_batches(encoded, tokenizer, batch_tokens=batch_tokens,
                                       max_batch_size=decode.batch_size,
                                       flat=batch_layout(model.config, tokenizer)):
        batch.to(device, dtype=decoding.weights)
        with decoding.autocast_on(device):
            output = generate(model, batch.src, batch.src_mask, decode, paragraph_graph=batch.paragraph_graph,
                              give_up=None if deadlines is None else _past([deadlines[i] for i in indices]))
        ranked = [None] * len(batch) if not attention_top_k else most_attended(
            model, batch, attention_top_k, device=device, decoding=decoding
        )
        yield indices, [
            Summary(
                id=batch.ids[i], summary=tokenizer.decode(hypotheses[0].tokens, batch.sources[i].oov_words),
                score=float(hypotheses[0].score),
                n_best=[(tokenizer.decode(h.tokens, batch.sources[i].oov_words), float(h.score)) for h in hypotheses],
                top_paragraphs=ranked[i],
            ) if hypotheses else None
            for i, hypotheses in enumerate(output.n_best)
        ]


def _past(deadlines: list[float | None]) -> GiveUp:
    """The search's ``give_up`` of a batch whose examples have these ``deadlines``."""

    def give_up(examples: list[int]) -> list[bool]:
        now = time.monotonic()
        return [deadlines[example] is not None and now > deadlines[example] for example in examples]

    return give_up


def most_attended(
    model: HierSum, batch: Batch, k: int, *, device: torch.device | str, decoding: DecodingPrecision
) -> list[list[tuple[int, int, float]]]:
    """The ``k`` most attended paragraphs of each example of ``batch`` (encoders with inter-paragraph layers)."""
    if not encoder_spec(model.config.encoder).inter_paragraph or not list(model.config.inter_layers):
        raise ValueError(f"attention inspection needs inter-paragraph layers; this checkpoint's encoder "
                         f"({model.config.encoder}) has none")
    with decoding.autocast_on(device):
        encoded = model.encode(
            batch.src, batch.src_mask, paragraph_graph=batch.paragraph_graph, return_attention=True, layout=batch.layout
        )
    return top_paragraphs(encoded, [source.provenance for source in batch.sources], k)
