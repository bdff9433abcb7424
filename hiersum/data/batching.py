"""Token-budget batching and collation into padded ``Batch`` tensors."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence

import torch
from torch.utils.data import Sampler

from hiersum.data.schema import Batch, EncodedExample


def grid_size(example: EncodedExample) -> tuple[int, int]:
    """(P, T) of an example: its paragraph count and longest paragraph (at least 1 x 1)."""
    return max(len(example.paragraphs), 1), max((len(p) for p in example.paragraphs), default=1) or 1


def make_token_budget_batches(
    examples: Sequence[EncodedExample], *, batch_tokens: int, max_batch_size: int
) -> list[list[int]]:
    """Group example indices, sorted by size, so that each batch's padded
    B x P_max x T_max grid (and B x S_max target) stays within ``batch_tokens``.

    An example larger than the budget on its own forms a batch of one.
    """
    def cost(index: int) -> tuple[int, int, int]:
        paragraphs, tokens = grid_size(examples[index])
        return paragraphs, tokens, len(examples[index].target) + 1

    order = sorted(range(len(examples)), key=lambda i: (cost(i), i))
    batches: list[list[int]] = []
    current: list[int] = []
    max_p = max_t = max_s = 0
    for index in order:
        p, t, s = cost(index)
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
    """

    def __init__(
        self,
        examples: Sequence[EncodedExample],
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

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return math.ceil(len(self.batches) / self.num_replicas)

    def __iter__(self) -> Iterator[list[int]]:
        order = list(range(len(self.batches)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        total = len(self) * self.num_replicas
        order += order[: total - len(order)]
        for position in order[self.rank :: self.num_replicas]:
            yield self.batches[position]


def collate(examples: Sequence[EncodedExample], *, pad_id: int, bos_id: int, eos_id: int) -> Batch:
    """Pad examples into a :class:`Batch` (``src`` [B, P, T], ``tgt_in``/``tgt_out`` [B, S])."""
    sizes = [grid_size(e) for e in examples]
    n_paragraphs = max(p for p, _ in sizes)
    n_tokens = max(t for _, t in sizes)
    target_length = max(len(e.target) for e in examples) + 1
    src = torch.full((len(examples), n_paragraphs, n_tokens), pad_id, dtype=torch.long)
    tgt_in = torch.full((len(examples), target_length), pad_id, dtype=torch.long)
    tgt_out = torch.full((len(examples), target_length), pad_id, dtype=torch.long)
    tgt_mask = torch.zeros((len(examples), target_length), dtype=torch.bool)
    src_mask = torch.zeros_like(src, dtype=torch.bool)
    for b, example in enumerate(examples):
        for p, paragraph in enumerate(example.paragraphs):
            src[b, p, : len(paragraph)] = torch.tensor(paragraph, dtype=torch.long)
            src_mask[b, p, : len(paragraph)] = True
        length = len(example.target) + 1
        tgt_in[b, :length] = torch.tensor([bos_id, *example.target], dtype=torch.long)
        tgt_out[b, :length] = torch.tensor([*example.target, eos_id], dtype=torch.long)
        tgt_mask[b, :length] = True
    return Batch(
        ids=[e.id for e in examples],
        src=src,
        src_mask=src_mask,
        tgt_in=tgt_in,
        tgt_out=tgt_out,
        tgt_mask=tgt_mask,
        references=[e.references for e in examples],
        sources=list(examples),
    )
