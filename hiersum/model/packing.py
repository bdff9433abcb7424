"""The packed layout of a [B, P, T] source grid: its real tokens only, as rows of one [N, D] tensor.

The hierarchical encoder computes on real tokens only (:class:`PackedGrid`): embeddings, projections,
feed-forward blocks and LayerNorms run on the packed token states [N, D]; the paragraph-local
self-attention runs per :class:`ParagraphBucket` (paragraphs of similar length, padded only up to the
longest paragraph of their bucket); pooling is a softmax over each paragraph's segment of rows.

Packed order: the real (non-empty) paragraphs sorted by length (stable: ties keep grid order), each
paragraph's real tokens consecutive in column order. A bucket is then a contiguous slice of rows.

Dimensions
    B  batch
    P  paragraphs per example
    T  tokens per paragraph (grid width)
    N  real tokens of the batch (packed rows)
    R  real (non-empty) paragraphs of the batch
    M  packed memory length: the most real tokens of any example
    n  paragraphs of one bucket
    W  width of one bucket: its longest paragraph

Masks are boolean with True = real token.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

BUCKET_TOKENS = 2048
"""Default budget of one attention bucket: its paragraphs x its width W (padded positions included)."""


@dataclass(frozen=True)
class ParagraphBucket:
    """Paragraphs of similar length whose self-attention runs as one padded [n, W] batch.

    The bucket owns packed rows ``start:end`` (its paragraphs' tokens, paragraph after paragraph).
    """

    start: int
    end: int
    gather_index: Tensor
    """long [n, W]: row (relative to ``start``) of the w-th token of each paragraph; padding points
    at the paragraph's first token (any valid row: it is masked as a key and dropped as a query)."""
    attn_mask: Tensor | None
    """bool [n, 1, 1, W], True = real key (the ``attn_mask`` of scaled_dot_product_attention); None
    when every paragraph of the bucket is W tokens long."""
    unpad_index: Tensor
    """long [end - start]: position in the flattened [n * W] bucket of each of its rows."""


@dataclass(frozen=True)
class PackedGrid:
    """Where the real tokens of a [B, P, T] grid are, and how the encoder batches them (see the module
    docstring). Built by :meth:`from_mask`; every index is a long tensor on the mask's device."""

    shape: tuple[int, int, int]
    """(B, P, T) of the grid."""
    grid_index: Tensor
    """[N]: index into the flattened B*P*T grid of each packed row."""
    token_position: Tensor
    """[N]: column t of each row (its position in its paragraph)."""
    paragraph_position: Tensor
    """[N]: paragraph p of each row (its position in its example)."""
    paragraph_of_row: Tensor
    """[N]: index (0..R-1, packed order) of each row's paragraph."""
    grid_paragraph_of_row: Tensor
    """[N]: index into the flattened B*P paragraphs of each row's paragraph."""
    paragraph_grid_index: Tensor
    """[R]: index into the flattened B*P paragraphs of each real paragraph."""
    real_paragraphs: Tensor
    """bool [B, P], True = paragraph with at least one real token."""
    memory_index: Tensor
    """[N]: index into the flattened [B * M] memory of each row (tokens of an example in grid order)."""
    memory_mask: Tensor
    """bool [B, M], True = real token."""
    buckets: tuple[ParagraphBucket, ...]

    @property
    def n_rows(self) -> int:
        """N, the number of real tokens."""
        return self.grid_index.numel()

    @property
    def n_paragraphs(self) -> int:
        """R, the number of real paragraphs."""
        return self.paragraph_grid_index.numel()

    @classmethod
    def from_mask(cls, src_mask: Tensor, *, bucket_tokens: int = BUCKET_TOKENS) -> PackedGrid:
        """The layout of ``src_mask`` bool [B, P, T] (True = real token, anywhere in a paragraph).

        ``bucket_tokens``: a bucket takes paragraphs (shortest first) while n x W stays within it
        (at least one paragraph a bucket).
        """
        if src_mask.dim() != 3 or src_mask.dtype != torch.bool:
            raise ValueError(f"src_mask must be bool [B, P, T]; found {src_mask.dtype} {tuple(src_mask.shape)}")
        B, P, T = src_mask.shape
        device = src_mask.device
        lengths = src_mask.sum(-1).view(B * P)  # (B*P,)
        nonempty = lengths.nonzero().squeeze(1)  # (R,) grid order
        order = nonempty[torch.sort(lengths[nonempty], stable=True).indices]  # (R,) by length
        sorted_lengths = lengths[order]  # (R,)
        rows = src_mask.view(B * P, T)[order].nonzero()  # (N, 2): (paragraph r, column t), row-major
        paragraph_of_row, token_position = rows.unbind(1)
        grid_paragraph = order[paragraph_of_row]  # (N,) index into B*P
        grid_index = grid_paragraph * T + token_position  # (N,)

        example_lengths = src_mask.view(B, P * T).sum(-1)  # (B,)
        M = max(int(example_lengths.max()), 1) if B else 1
        rank_in_example = src_mask.view(B, P * T).cumsum(-1).view(-1) - 1  # (B*P*T,) grid order
        memory_index = torch.div(grid_index, P * T, rounding_mode="floor") * M + rank_in_example[grid_index]
        memory_mask = torch.arange(M, device=device) < example_lengths.unsqueeze(1)  # (B, M)

        return cls(
            shape=(B, P, T),
            grid_index=grid_index,
            token_position=token_position,
            paragraph_position=grid_paragraph % P,
            paragraph_of_row=paragraph_of_row,
            grid_paragraph_of_row=grid_paragraph,
            paragraph_grid_index=order,
            real_paragraphs=(lengths > 0).view(B, P),
            memory_index=memory_index,
            memory_mask=memory_mask,
            buckets=tuple(_buckets(sorted_lengths.tolist(), bucket_tokens, device)),
        )

    def scatter_to_grid(self, rows: Tensor) -> Tensor:
        """Packed rows [N, ...] -> the grid [B, P, T, ...], zero at padding."""
        B, P, T = self.shape
        grid = rows.new_zeros(B * P * T, *rows.shape[1:]).index_copy(0, self.grid_index, rows)
        return grid.view(B, P, T, *rows.shape[1:])

    def scatter_to_memory(self, rows: Tensor) -> Tensor:
        """Packed rows [N, D] -> the memory [B, M, D]: each example's real tokens in grid order, zero-padded."""
        B, M = self.memory_mask.shape
        memory = rows.new_zeros(B * M, rows.size(-1)).index_copy(0, self.memory_index, rows)
        return memory.view(B, M, rows.size(-1))


def _buckets(sorted_lengths: list[int], bucket_tokens: int, device: torch.device) -> list[ParagraphBucket]:
    """Split paragraphs sorted by length (ascending) into consecutive buckets of at most
    ``bucket_tokens`` padded positions (n x W) each."""
    buckets = []
    first = start_row = 0
    while first < len(sorted_lengths):
        last = first + 1  # exclusive
        while last < len(sorted_lengths) and (last + 1 - first) * sorted_lengths[last] <= bucket_tokens:
            last += 1
        paragraph_lengths = sorted_lengths[first:last]
        buckets.append(_bucket(paragraph_lengths, start_row, device))
        start_row += sum(paragraph_lengths)
        first = last
    return buckets


def _bucket(paragraph_lengths: list[int], start: int, device: torch.device) -> ParagraphBucket:
    """The bucket of consecutive paragraphs of ``paragraph_lengths`` tokens whose rows begin at ``start``."""
    lengths = torch.tensor(paragraph_lengths, device=device)  # (n,)
    W = paragraph_lengths[-1]
    offsets = lengths.cumsum(0) - lengths  # (n,) first row of each paragraph, relative to start
    column = torch.arange(W, device=device)  # (W,)
    real = column < lengths.unsqueeze(1)  # (n, W)
    gather_index = torch.where(real, offsets.unsqueeze(1) + column, offsets.unsqueeze(1))  # (n, W)
    uniform = paragraph_lengths[0] == W
    return ParagraphBucket(
        start=start,
        end=start + sum(paragraph_lengths),
        gather_index=gather_index,
        attn_mask=None if uniform else real.view(len(paragraph_lengths), 1, 1, W),
        unpad_index=real.view(-1).nonzero().squeeze(1),
    )
