"""The packed layout of a [B, P, T] source grid: its real tokens only, as rows of one [N, D] tensor.

The hierarchical encoder computes on real tokens only (:class:`PackedGrid`): embeddings, projections,
feed-forward blocks and LayerNorms run on the packed token states [N, D]; the paragraph-local
self-attention runs per :class:`ParagraphBucket` (the paragraphs of one width class, padded up to that
width); pooling is a softmax over each paragraph's segment of rows.

Packed order: the real (non-empty) paragraphs sorted by length (stable: ties keep grid order), each
paragraph's real tokens consecutive in column order.

Built for compiling: the layout is computed once per batch outside the model (``collate`` does it on
the CPU, :meth:`PackedGrid.to` moves it with the batch) and holds only index tensors, so the model's
forward reads no Python value out of a tensor. The bucket widths come from a fixed ladder
(:data:`BUCKET_WIDTHS`) and a batch has one bucket per width up to the corpus's longest paragraph
(``data.max_paragraph_tokens``), each of at least :data:`MIN_BUCKET_PARAGRAPHS` paragraphs, so the
shapes a compiled layer sees vary only in their paragraph counts (dynamic dimensions).

Dimensions
    B  batch
    P  paragraphs per example
    T  tokens per paragraph (grid width)
    N  real tokens of the batch (packed rows)
    R  real (non-empty) paragraphs of the batch
    M  packed memory length: the most real tokens of any example
    n  paragraphs of one bucket
    W  width of one bucket (an entry of :data:`BUCKET_WIDTHS`)
    S  rows of one :class:`RowChunk`

Masks are boolean with True = real token.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
from torch import Tensor

BUCKET_WIDTHS: tuple[int, ...] = tuple(sorted({base << shift for base in (8, 12) for shift in range(12)}))
"""The widths a bucket may have: 8, 12, 16, 24, 32, 48, ... (a paragraph is padded by at most a third);
a paragraph longer than the last is padded to its own length."""

MIN_BUCKET_PARAGRAPHS = 2
"""Paragraphs of a bucket at the least (empty places hold a one-token placeholder): a compiled layer
specializes on dimensions of size 0 and 1, so no bucket has them."""


def bucket_width(length: int) -> int:
    """The width of the bucket of a paragraph of ``length`` tokens: the first entry of
    :data:`BUCKET_WIDTHS` that holds it."""
    for width in BUCKET_WIDTHS:
        if width >= length:
            return width
    return length


@dataclass
class ParagraphBucket:
    """The paragraphs of one width class, whose self-attention runs as one padded [n, W] batch (not frozen, as
    :class:`PackedGrid`)."""

    gather_index: Tensor
    """long [n, W]: packed row of the w-th token of each paragraph; padding (and every place of a
    placeholder paragraph) points at a valid row (masked as a key, dropped as a query)."""
    attn_mask: Tensor
    """bool [n, 1, 1, W], True = real key (the ``attn_mask`` of scaled_dot_product_attention); a
    placeholder paragraph has one real key, so no row of the attention is empty."""

    def to(self, device: torch.device | str) -> ParagraphBucket:
        return ParagraphBucket(self.gather_index.to(device), self.attn_mask.to(device))


@dataclass(frozen=True)
class RowChunk:
    """A run of whole paragraphs of a :class:`PackedGrid`: its packed rows ``start:stop`` (S of them), with the
    buckets of their paragraph-local attention counted from ``start`` (what
    :meth:`hiersum.model.layers.MultiHeadAttention.self_attend_buckets` reads of a layout). Made by
    :meth:`PackedGrid.row_chunks`."""

    start: int
    stop: int
    first_paragraph: int
    """The packed index (0..R-1) of the chunk's first paragraph."""
    n_paragraphs: int
    """Paragraphs of the chunk (the packed ``first_paragraph:first_paragraph + n_paragraphs``)."""
    buckets: tuple[ParagraphBucket, ...]
    """As :attr:`PackedGrid.buckets`, over the chunk's paragraphs; row indices count from ``start``."""
    bucket_row_index: Tensor
    """[S]: as :attr:`PackedGrid.bucket_row_index`, for the chunk's rows."""


@dataclass
class PackedGrid:
    """Where the real tokens of a [B, P, T] grid are, and how the encoder batches them (see the module
    docstring). Built by :meth:`from_mask`; every index is a long tensor on the mask's device. Not frozen: a
    :class:`~hiersum.data.schema.Batch` carries it, and Lightning's ``convert_input`` (``bf16-true``) rebuilds
    every dataclass of a batch by setting the fields of a copy."""

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
    """One per width of :data:`BUCKET_WIDTHS` up to the widest paragraph's, or the ``widest`` given to
    :meth:`from_mask` (none without real tokens)."""
    bucket_row_index: Tensor
    """[N]: position of each packed row in the buckets' outputs, flattened and concatenated
    ([sum n * W]): what brings the attention outputs back into packed order."""

    @property
    def n_rows(self) -> int:
        """N, the number of real tokens."""
        return self.grid_index.numel()

    @property
    def n_paragraphs(self) -> int:
        """R, the number of real paragraphs."""
        return self.paragraph_grid_index.numel()

    @classmethod
    def from_mask(cls, src_mask: Tensor, *, widest: int = 0) -> PackedGrid:
        """The layout of ``src_mask`` bool [B, P, T] (True = real token, anywhere in a paragraph), with buckets
        of every width up to that of the longest paragraph or of ``widest`` tokens, whichever is wider (given
        the longest paragraph a corpus may have, every batch has the same buckets: ``collate`` does so).
        Reads tensor values into Python (sorting, bucket sizes): build it outside a compiled region."""
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

        buckets, bucket_row_index = _buckets(sorted_lengths.tolist(), widest, device)
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
            buckets=buckets,
            bucket_row_index=bucket_row_index,
        )

    def to(self, device: torch.device | str) -> PackedGrid:
        """The same layout with every tensor on ``device``."""
        moved = {field.name: getattr(self, field.name) for field in fields(self)}
        for name, value in moved.items():
            if isinstance(value, Tensor):
                moved[name] = value.to(device, non_blocking=True)
        moved["buckets"] = tuple(bucket.to(device) for bucket in self.buckets)
        return PackedGrid(**moved)

    def row_chunks(self, max_rows: int) -> list[RowChunk]:
        """The packed rows cut into runs of whole paragraphs, each of at most ``max_rows`` rows (a paragraph
        longer than that is a run of its own), in packed order: what lets paragraph-local layers run a part of
        the rows at a time (they never look across paragraphs). Reads tensor values into Python."""
        lengths = torch.bincount(self.paragraph_of_row, minlength=self.n_paragraphs).tolist()  # (R,) packed order
        device = self.grid_index.device
        chunks, first, start = [], 0, 0
        while first < len(lengths):
            last, stop = first + 1, start + lengths[first]
            while last < len(lengths) and stop - start + lengths[last] <= max_rows:
                stop += lengths[last]
                last += 1
            buckets, bucket_row_index = _buckets(lengths[first:last], 0, device)
            chunks.append(RowChunk(start, stop, first, last - first, buckets, bucket_row_index))
            first, start = last, stop
        return chunks

    def pack(self, grid: Tensor) -> Tensor:
        """The values of a grid [B, P, T] (e.g. the token ids) at the packed rows: [N]."""
        return grid.reshape(-1).index_select(0, self.grid_index)

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


def _buckets(sorted_lengths: list[int], widest: int, device: torch.device
             ) -> tuple[tuple[ParagraphBucket, ...], Tensor]:
    """The buckets of paragraphs sorted by length (ascending), one per width of :data:`BUCKET_WIDTHS` up
    to that of the widest paragraph or of ``widest`` tokens, and the ``bucket_row_index`` of their rows
    (see :class:`PackedGrid`)."""
    if not sorted_lengths:
        return (), torch.zeros(0, dtype=torch.long, device=device)
    widest = bucket_width(max(sorted_lengths[-1], widest))
    widths = [width for width in BUCKET_WIDTHS if width < widest] + [widest]
    first_rows = [0]
    for length in sorted_lengths[:-1]:
        first_rows.append(first_rows[-1] + length)
    buckets, row_positions = [], []
    first = flat_start = 0
    for width in widths:
        last = first
        while last < len(sorted_lengths) and sorted_lengths[last] <= width:
            last += 1
        placeholders = max(MIN_BUCKET_PARAGRAPHS - (last - first), 0)
        lengths = torch.tensor(sorted_lengths[first:last] + [1] * placeholders, device=device)  # (n,)
        starts = torch.tensor(first_rows[first:last] + [0] * placeholders, device=device).unsqueeze(1)  # (n, 1)
        real = torch.arange(width, device=device) < lengths.unsqueeze(1)  # (n, W)
        buckets.append(ParagraphBucket(
            gather_index=torch.where(real, starts + torch.arange(width, device=device), starts),
            attn_mask=real.view(-1, 1, 1, width),
        ))
        row_positions.append(real[: last - first].reshape(-1).nonzero().squeeze(1) + flat_start)  # not placeholders
        flat_start += real.numel()
        first = last
    return tuple(buckets), torch.cat(row_positions)
