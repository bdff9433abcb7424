"""Token-budget batching and collation into padded ``Batch`` tensors."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np
import torch
from torch.utils.data import DataLoader, Sampler

from hiersum.config import ModelConfig
from hiersum.data.packing import PackedGrid
from hiersum.data.schema import Batch, EncodedExample
from hiersum.data.tokenizer import SubwordTokenizer


class SourceLayout(str, Enum):
    """The source tensor an encoder reads (declared by each encoder of :mod:`hiersum.model.encoder_registry`)."""

    GRID = "grid"
    """[B, P, T]: paragraphs of tokens."""
    FLAT = "flat"
    """[B, L]: the paragraphs joined into one sequence (see :class:`FlatLayout`)."""


@dataclass(frozen=True)
class FlatLayout:
    """How ``collate`` joins an example's paragraphs into one sequence for a flat model (as the
    official ``-hier false``): paragraphs joined with ``separator_id``, cut to ``max_tokens``, then EOS."""

    max_tokens: int
    separator_id: int


def flat_layout(layout: SourceLayout, model: ModelConfig, tokenizer: SubwordTokenizer) -> FlatLayout | None:
    """How ``collate`` lays out the source of ``model``, whose encoder reads ``layout`` (its registry
    entry's ``source_layout``, see :func:`hiersum.model.encoder_registry.batch_layout`): a :class:`FlatLayout`
    for :attr:`SourceLayout.FLAT`, None for the [P, T] grid."""
    if SourceLayout(layout) is SourceLayout.GRID:
        return None
    return FlatLayout(max_tokens=model.flat_max_tokens, separator_id=tokenizer.paragraph_separator_id)


def flatten_paragraphs(paragraphs: Sequence[Sequence[int]], layout: FlatLayout, eos_id: int) -> list[int]:
    """``p1 SEP p2 SEP ... pn`` cut to ``layout.max_tokens`` tokens, then EOS."""
    joined: list[int] = []
    for index, paragraph in enumerate(paragraphs):
        joined += ([layout.separator_id] if index else []) + list(paragraph)
    return joined[: layout.max_tokens] + [eos_id]


def grid_size(example: EncodedExample) -> tuple[int, int]:
    """(P, T) of an example: its paragraph count and longest paragraph (at least 1 x 1)."""
    return max(len(example.paragraphs), 1), max((len(p) for p in example.paragraphs), default=1) or 1


LENGTH_FIELDS = ("paragraphs", "longest_paragraph", "target")
"""The columns of a length index ([N, 3] ints, :func:`example_lengths`): per example its paragraph count,
its longest paragraph's token count and its target's token count (BOS/EOS excluded)."""


def example_lengths(examples: Sequence[EncodedExample]) -> np.ndarray:
    """The length index [N, 3] of ``examples`` (columns :data:`LENGTH_FIELDS`); a prepared corpus
    stores it on disk (:mod:`hiersum.data.prepared`)."""
    lengths = np.zeros((len(examples), len(LENGTH_FIELDS)), dtype=np.int32)
    for row, example in enumerate(examples):
        lengths[row] = (len(example.paragraphs), max(map(len, example.paragraphs), default=0), len(example.target))
    return lengths


def make_token_budget_batches(
    examples: Sequence[EncodedExample] | np.ndarray, *, batch_tokens: int, max_batch_size: int
) -> list[list[int]]:
    """Group example indices, sorted by size, so that each batch's padded
    B x P_max x T_max grid (and B x S_max target) stays within ``batch_tokens``.

    ``examples``: the examples, or their length index [N, 3] (:func:`example_lengths`): the batches
    depend on the lengths only. An example larger than the budget on its own forms a batch of one.
    """
    lengths = examples if isinstance(examples, np.ndarray) else example_lengths(examples)
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1, len(LENGTH_FIELDS))
    # the padded size of each example: grid (P, T) at least 1 x 1, target with its BOS / EOS
    costs = np.stack([np.maximum(lengths[:, 0], 1), np.maximum(lengths[:, 1], 1), lengths[:, 2] + 1], axis=1)
    order = np.lexsort((np.arange(len(costs)), costs[:, 2], costs[:, 1], costs[:, 0]))  # by (P, T, S), then index
    batches: list[list[int]] = []
    current: list[int] = []
    max_p = max_t = max_s = 0
    for index, (p, t, s) in zip(order.tolist(), costs[order].tolist(), strict=True):
        grown = (max(max_p, p), max(max_t, t), max(max_s, s))
        size = len(current) + 1
        if current and (size > max_batch_size or size * max(grown[0] * grown[1], grown[2]) > batch_tokens):
            batches.append(current)
            current, grown = [], (p, t, s)
        current.append(index)
        max_p, max_t, max_s = grown
    if current:
        batches.append(current)
    return batches


class TokenBudgetBatchSampler(Sampler[list[int]]):
    """Yields the batches of :func:`make_token_budget_batches`, shuffled per epoch when
    ``shuffle``, and sharded over ``num_replicas`` ranks (every rank gets the same
    number of batches, as DDP requires; the last few batches are repeated to even up).
    ``examples``: the examples, or their length index [N, 3] (a prepared corpus plans its batches
    from the index on disk without reading an example).

    Resumable mid-epoch: the order of an epoch is a function of ``seed + epoch``, so the state is
    the epoch and the number of its batches training consumed (:meth:`mark_consumed`, called when a
    batch reaches the model, not when a loader prefetches it). After :meth:`load_state_dict`, the
    next iteration over that epoch starts after its consumed batches; a state saved once its epoch was
    consumed (the checkpoint of the validation at the epoch's end) resumes at the next epoch's start.
    """

    def __init__(
        self,
        examples: Sequence[EncodedExample] | np.ndarray,
        *,
        batch_tokens: int,
        max_batch_size: int,
        shuffle: bool,
        seed: int = 0,
        num_replicas: int = 1,
        rank: int = 0,
    ) -> None:
        self.batches = make_token_budget_batches(examples, batch_tokens=batch_tokens, max_batch_size=max_batch_size)
        self.shuffle = shuffle
        self.seed = seed
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.consumed = 0
        """Batches of the current epoch that reached the model."""
        self._resume_at: tuple[int, int] | None = None  # (epoch, consumed batches) of a loaded state

    @property
    def sampler(self) -> TokenBudgetBatchSampler:
        """This sampler: Lightning calls ``set_epoch`` on a loader's ``batch_sampler.sampler`` (the sampler of a
        ``BatchSampler``) when every epoch starts, so each epoch gets its own order."""
        return self

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def mark_consumed(self) -> None:
        """One more batch of this epoch reached the model."""
        self.consumed += 1

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "consumed": self.consumed, "seed": self.seed, "batches": len(self.batches)}

    def load_state_dict(self, state: dict[str, int]) -> None:
        if (state["seed"], state["batches"]) != (self.seed, len(self.batches)):
            raise ValueError(
                f"the checkpoint's batches (seed {state['seed']}, {state['batches']} batches) are not this "
                f"run's (seed {self.seed}, {len(self.batches)} batches): resume with the same data and settings"
            )
        if state["consumed"] >= len(self):  # saved at the end of its epoch (validation): the next one is due
            self.epoch, self._resume_at = state["epoch"] + 1, None
        else:
            self.epoch = state["epoch"]
            self._resume_at = (state["epoch"], state["consumed"])

    def __len__(self) -> int:
        return math.ceil(len(self.batches) / self.num_replicas)

    def __iter__(self) -> Iterator[list[int]]:
        order = list(range(len(self.batches)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        total = len(self) * self.num_replicas
        order += order[: total - len(order)]
        start = 0
        if self._resume_at is not None and self._resume_at[0] == self.epoch:
            start = self._resume_at[1]
        self._resume_at = None
        self.consumed = start
        for position in order[self.rank :: self.num_replicas][start:]:
            yield self.batches[position]


class ResumableDataLoader(DataLoader):
    """A DataLoader over a :class:`TokenBudgetBatchSampler` with Lightning's loader state interface
    (``state_dict`` / ``load_state_dict``, saved in the checkpoint's loop state by the Trainer): a run
    resumed mid-epoch neither repeats nor skips a batch."""

    def state_dict(self) -> dict[str, int]:
        return self.batch_sampler.state_dict()

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.batch_sampler.load_state_dict(state)


def pad_grid(examples: Sequence[EncodedExample], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(``src`` [B, P, T], ``src_mask`` [B, P, T]): the paragraphs of each example, padded with ``pad_id``."""
    sizes = [grid_size(e) for e in examples]
    src = torch.full((len(examples), max(p for p, _ in sizes), max(t for _, t in sizes)), pad_id, dtype=torch.long)
    src_mask = torch.zeros_like(src, dtype=torch.bool)
    for b, example in enumerate(examples):
        for p, paragraph in enumerate(example.paragraphs):
            src[b, p, : len(paragraph)] = torch.tensor(paragraph, dtype=torch.long)
            src_mask[b, p, : len(paragraph)] = True
    return src, src_mask


def pad_flat(
    examples: Sequence[EncodedExample], layout: FlatLayout, pad_id: int, eos_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(``src`` [B, L], ``src_mask`` [B, L]): each example's paragraphs flattened
    (:func:`flatten_paragraphs`), right-padded."""
    rows = [flatten_paragraphs(e.paragraphs, layout, eos_id) for e in examples]
    src = torch.full((len(rows), max(map(len, rows))), pad_id, dtype=torch.long)
    src_mask = torch.zeros_like(src, dtype=torch.bool)
    for b, row in enumerate(rows):
        src[b, : len(row)] = torch.tensor(row, dtype=torch.long)
        src_mask[b, : len(row)] = True
    return src, src_mask


def pad_graphs(examples: Sequence[EncodedExample], n_paragraphs: int) -> torch.Tensor | None:
    """``paragraph_graph`` [B, P, P] (zero at padding), or None when no example carries a graph."""
    if all(e.graph is None for e in examples):
        return None
    graphs = torch.zeros(len(examples), n_paragraphs, n_paragraphs)
    for b, example in enumerate(examples):
        if example.graph is not None:
            n = len(example.graph)
            graphs[b, :n, :n] = torch.from_numpy(example.graph)
    return graphs


def collate(
    examples: Sequence[EncodedExample], *, pad_id: int, bos_id: int, eos_id: int, flat: FlatLayout | None = None,
    max_paragraph_tokens: int = 0, eos_after_truncation: bool = True,
) -> Batch:
    """Pad examples into a :class:`Batch`: ``src`` [B, P, T] (or [B, L] with a ``flat`` layout, the one
    data pipeline serving both encoders), ``tgt_in``/``tgt_out`` [B, S], ``paragraph_graph`` [B, P, P], and
    the packed ``layout`` of a grid, with buckets up to the width of ``max_paragraph_tokens`` (the longest
    paragraph of the corpus: every batch gets the same buckets, see :mod:`hiersum.data.packing`).

    A target reads ``BOS t1 .. tn`` and predicts ``t1 .. tn EOS``; one cut at ``data.max_target_tokens``
    (``example.target_truncated``) without ``eos_after_truncation`` reads ``BOS t1 .. tn-1`` and predicts
    ``t1 .. tn``: no EOS where the reference went on.
    """
    src, src_mask = pad_grid(examples, pad_id) if flat is None else pad_flat(examples, flat, pad_id, eos_id)
    labels = [[*example.target, eos_id] if eos_after_truncation or not example.target_truncated else example.target
              for example in examples]
    target_length = max(len(row) for row in labels)
    tgt_in = torch.full((len(examples), target_length), pad_id, dtype=torch.long)
    tgt_out = torch.full((len(examples), target_length), pad_id, dtype=torch.long)
    tgt_mask = torch.zeros((len(examples), target_length), dtype=torch.bool)
    for b, row in enumerate(labels):
        tgt_in[b, : len(row)] = torch.tensor([bos_id, *row[:-1]], dtype=torch.long)
        tgt_out[b, : len(row)] = torch.tensor(row, dtype=torch.long)
        tgt_mask[b, : len(row)] = True
    return Batch(
        ids=[e.id for e in examples],
        src=src,
        src_mask=src_mask,
        tgt_in=tgt_in,
        tgt_out=tgt_out,
        tgt_mask=tgt_mask,
        references=[e.references for e in examples],
        sources=list(examples),
        paragraph_graph=pad_graphs(examples, src.size(1)) if flat is None else None,
        layout=PackedGrid.from_mask(src_mask, widest=max_paragraph_tokens) if flat is None else None,
    )
