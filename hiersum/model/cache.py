"""The decoder's state: the self-attention cache of the target tokens seen so far and the memory
keys/values projected once, with the row selections beam search needs (what the model adds to it, the copy
attention's memory and coverage, is in :class:`hiersum.model.summarizer_state.SummarizerState`).

Dimensions
    N  rows (examples, or examples x beams while decoding)
    B' memory entries (examples; N = B' x beams)
    S  target tokens consumed so far (cache length)
    C  cache capacity (positions preallocated, C >= S)
    M  packed memory length
    D  model width
    H  heads
    E  head width, D / H

The self-attention cache is preallocated (one buffer per layer, grown by doubling if a call
needs more room) and written in place, so a decoding step allocates no cache memory. Its
buffers start zeroed and only positions < S are ever written, so the positions beyond hold
zeros: a static step (:func:`write_key_value_at`) can attend over the whole capacity with the
unwritten positions masked out. Beam
reordering copies only the rows that change, through a spare buffer of the same shape (or,
when most rows change, gathers all rows into the spare and the two swap).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import Tensor

from hiersum.model.layers import KeyValue


def cached_key_value(buffer: Tensor, length: int) -> KeyValue:
    """The keys/values of positions < ``length`` in one layer's ``buffer`` [N, 2, H, C, E], views
    [N, H, length, E]."""
    used = buffer[:, :, :, :length]  # (N, 2, H, length, E)
    return KeyValue(used[:, 0], used[:, 1])


def write_key_value(buffer: Tensor, start: int, key_value: KeyValue) -> KeyValue:
    """Store new keys/values [N, H, L, E] at positions start..start+L-1 of one layer's ``buffer``
    [N, 2, H, C, E]; return the keys/values of positions < start + L (views)."""
    end = start + key_value.length
    buffer[:, 0, :, start:end].copy_(key_value.keys)
    buffer[:, 1, :, start:end].copy_(key_value.values)
    return cached_key_value(buffer, end)


def write_key_value_at(buffer: Tensor, position: Tensor, key_value: KeyValue) -> KeyValue:
    """Store one new key/value [N, H, 1, E] at ``position`` (long [1], a tensor so that a compiled
    step does not specialise on it) of ``buffer`` [N, 2, H, C, E]; return the keys/values of all C
    positions (views; the caller masks the positions > ``position``)."""
    # the buffer's dtype: allocated like the encoder's memory, fp32 under CUDA autocast (layer_norm), where the
    # projected keys/values are bf16 (copy_ converts; index_copy_ does not)
    new = torch.stack([key_value.keys, key_value.values], 1).to(buffer.dtype)  # (N, 2, H, 1, E)
    buffer.index_copy_(3, position, new)
    return KeyValue(buffer[:, 0], buffer[:, 1])  # (N, H, C, E) each


@dataclass
class StepWeights:
    """Weights laid out for the one-token decoding step, made from the parameters when decoding
    starts (:meth:`hiersum.model.decoder.TransformerDecoder.init_state`), so they never go stale
    against them; the parameters and ``state_dict()`` keys are untouched."""

    self_qkv: list[tuple[Tensor, Tensor]]
    """Per decoder layer, its self-attention's query, key and value projections stacked:
    (weight [3*D, D], bias [3*D]), one matrix product instead of three."""
    output: tuple[Tensor, Tensor] | None = None
    """The output layer as (weight transposed and contiguous [D, V], bias [V]), for
    ``addmm(bias, x, weight_t)``; None: the model's own layer."""


@dataclass
class SelfAttentionCache:
    """Self-attention keys and values of the target tokens seen so far, written in place.

    ``buffers[i]`` is layer i's [N, 2, H, C, E] (keys at ``[:, 0]``, values at ``[:, 1]``); only
    positions < S (the owning :class:`DecoderState`'s ``length``) hold data. ``spares`` (same
    shapes, or None) receive the rows at the next :meth:`select_rows` with ``reuse=True``, which
    hands the current buffers over as the new spares: beam search reorders without allocating.
    """

    buffers: list[Tensor]
    spares: list[Tensor] | None = None

    @classmethod
    def allocate(cls, rows: int, *, layers: int, heads: int, head_dim: int, capacity: int, like: Tensor):
        """Empty buffers for ``rows`` rows and ``capacity`` positions (dtype and device of ``like``)."""
        return cls([like.new_zeros(rows, 2, heads, capacity, head_dim) for _ in range(layers)])

    @property
    def capacity(self) -> int:
        """C, positions the buffers hold."""
        return self.buffers[0].size(3)

    def layer(self, index: int, length: int) -> KeyValue:
        """Layer ``index``'s keys/values of positions < ``length``, views [N, H, length, E]."""
        return cached_key_value(self.buffers[index], length)

    def reserve(self, needed: int, *, length: int) -> SelfAttentionCache:
        """A cache with room for ``needed`` positions: this one, or a copy of its first ``length``
        positions into buffers of capacity max(needed, 2 C)."""
        if needed <= self.capacity:
            return self
        capacity = max(needed, 2 * self.capacity)
        grown = []
        for buffer in self.buffers:
            new = buffer.new_zeros(*buffer.shape[:3], capacity, buffer.size(4))
            new[:, :, :, :length].copy_(buffer[:, :, :, :length])
            grown.append(new)
        return SelfAttentionCache(grown)

    def reorder(self, rows: Tensor, *, length: int) -> SelfAttentionCache:
        """Row r takes the content of row ``rows[r]`` (long [N]), for the first ``length`` positions;
        this cache must not be used afterwards.

        Rows that keep their own content are not copied. When fewer than half of the rows move
        (usual for a trained model's beams), the moved rows are gathered into the spares and
        written back in place; otherwise all rows are gathered into the spares and the buffers
        swap (:meth:`select_rows` with ``reuse=True``).
        """
        N = self.buffers[0].size(0)
        moved = (rows != torch.arange(N, device=rows.device)).nonzero().squeeze(1)  # (c,)
        if moved.numel() == 0:
            return self
        if 2 * moved.numel() > N or self.buffers[0].requires_grad:
            return self.select_rows(rows, length=length, reuse=True)
        spares = self.spares
        if spares is None or spares[0].size(0) < moved.numel():
            spares = [torch.zeros_like(buffer) for buffer in self.buffers]
        sources = rows.index_select(0, moved)  # (c,)
        for buffer, spare in zip(self.buffers, spares, strict=True):
            used, moved_rows = buffer[:, :, :, :length], spare[: moved.numel(), :, :, :length]
            torch.index_select(used, 0, sources, out=moved_rows)
            used.index_copy_(0, moved, moved_rows)
        return SelfAttentionCache(self.buffers, spares)

    def select_rows(self, rows: Tensor, *, length: int, reuse: bool) -> SelfAttentionCache:
        """Rows ``rows`` [N'] (long, into the N rows; repeats allowed) of the first ``length``
        positions. ``reuse=True`` writes them into the spares and hands these buffers over as the
        next spares: this cache must not be used afterwards. ``reuse=False`` allocates."""
        n = rows.numel()
        if reuse and self.spares is not None and n <= self.spares[0].size(0):
            targets = [spare[:n] for spare in self.spares]  # (N', 2, H, C, E), contiguous
        else:
            targets = [buffer.new_zeros(n, *buffer.shape[1:]) for buffer in self.buffers]
        for buffer, target in zip(self.buffers, targets, strict=True):
            used, into = buffer[:, :, :, :length], target[:, :, :, :length]
            if used.requires_grad:  # out= does not support autograd
                into.copy_(used.index_select(0, rows))
            else:
                torch.index_select(used, 0, rows, out=into)
        spares = [buffer[:n] for buffer in self.buffers] if reuse and n <= self.buffers[0].size(0) else None
        return SelfAttentionCache(targets, spares)


@dataclass
class DecoderState:
    """Everything the decoder needs to continue a batch of sequences.

    Rows come in groups of ``group_size`` consecutive rows (the beams of one example) that share
    one memory entry: row r reads memory entry r // group_size, so N = B' x group_size.

    A state is consumed by the call that continues it: :class:`TransformerDecoder` writes into its
    cache, and :meth:`reorder_beams` / :meth:`select_examples` reuse its buffers. Continue a state
    only once, or copy it first with :meth:`reorder`.
    """

    memory: list[KeyValue]
    """Context-attention keys/values of the memory per decoder layer, [B', H, M, E] each
    (projected once, one per example, shared by its beams)."""
    memory_attn_mask: Tensor | None
    """[B', 1, 1, M] bool, True = real memory token, ready for scaled_dot_product_attention;
    None when every memory token is real."""
    self_attn: SelfAttentionCache | None
    """The keys/values of the S target tokens consumed, or None for a state that keeps none
    (teacher forcing in one call; such a state cannot be continued)."""
    length: int
    """S, target tokens already consumed (the position of the next token)."""
    group_size: int = 1
    """G, rows per memory entry (beams per example)."""
    step_weights: StepWeights | None = None
    """Weights laid out for the step (None: the layers' own)."""

    def _select(
        self, rows: Tensor, *, reuse: bool, entries: Tensor | None = None, group_size: int | None = None
    ) -> DecoderState:
        """Rows ``rows`` of the cache; memory entries ``entries`` (None: the memory is kept)."""
        memory, mask = self.memory, self.memory_attn_mask
        if entries is not None:
            memory = [kv.index_select(entries) for kv in memory]
            mask = None if mask is None else mask.index_select(0, entries)
        cache = None if self.self_attn is None else self.self_attn.select_rows(rows, length=self.length, reuse=reuse)
        return replace(self, memory=memory, memory_attn_mask=mask, self_attn=cache,
                       group_size=self.group_size if group_size is None else group_size)

    def reorder(self, indices: Tensor) -> DecoderState:
        """Rows ``indices`` [N'] (long, into the N rows), any of them, repeats allowed.

        General but costly: the memory keys/values are copied per row (group size 1), and the
        cache into new buffers (this state stays usable). Beam search uses :meth:`tile`,
        :meth:`reorder_beams` and :meth:`select_examples` instead.
        """
        return self._select(indices, reuse=False, entries=self.entries_of(indices), group_size=1)

    def tile(self, beam_size: int) -> DecoderState:
        """Repeat every row ``beam_size`` times (consecutively); the memory is not copied."""
        rows = torch.arange(self.rows, device=self.memory[0].keys.device).repeat_interleave(beam_size)
        return self._select(rows, reuse=False, group_size=self.group_size * beam_size)  # (N*beam_size,)

    def reorder_beams(self, indices: Tensor) -> DecoderState:
        """Rows ``indices`` [N]: ``indices[r]`` must be a row of r's own group (a beam of the same
        example). Only the self-attention caches move (see :meth:`SelfAttentionCache.reorder`)."""
        if self.self_attn is None:
            return self
        return replace(self, self_attn=self.self_attn.reorder(indices, length=self.length))

    @property
    def rows(self) -> int:
        """N, rows of the state."""
        return self.memory[0].keys.size(0) * self.group_size

    def entries_of(self, rows: Tensor) -> Tensor:
        """The memory entry [N'] (long) each of ``rows`` [N'] (long) reads: r // G."""
        return rows.div(self.group_size, rounding_mode="floor")  # (N',)

    def rows_of(self, examples: Tensor) -> Tensor:
        """The rows [b * G] of memory entries ``examples`` [b] (long), group by group."""
        G = self.group_size
        return (examples.unsqueeze(1) * G + torch.arange(G, device=examples.device)).view(-1)  # (b*G,)

    def select_examples(self, examples: Tensor) -> DecoderState:
        """Keep memory entries ``examples`` [b] (long, into the B' entries) and their rows."""
        return self._select(self.rows_of(examples), reuse=True, entries=examples)
