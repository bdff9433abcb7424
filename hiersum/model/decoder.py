"""Pre-LN transformer decoder over the packed encoder memory, with a key/value cache.

Dimensions
    N  rows (examples, or examples x beams while decoding)
    L  new target tokens fed in this call (all of them when teacher forcing, 1 per step)
    S  target tokens consumed so far (cache length)
    M  packed memory length
    D  model width
    H  heads
    E  head width, D / H

Masks are boolean with True = real token. Teacher forcing and step-by-step decoding run the
same code: a call appends its L tokens to the self-attention cache, and the memory keys and
values are projected once in :meth:`TransformerDecoder.init_state`.

While beam searching, the N rows are B' examples x G beams, beams of an example consecutive.
The memory keys/values stay per example ([B', H, M, E]); the G beams of an example are folded
into the query length of the context attention, so reordering beams never copies the memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from hiersum.config import ModelConfig
from hiersum.model.layers import (
    LAYER_NORM_EPS,
    FeedForward,
    KeyValue,
    MultiHeadAttention,
    sinusoid_table,
)


@dataclass
class LayerCache:
    """Keys and values one decoder layer keeps between calls."""

    self_attn: KeyValue
    """Self-attention keys/values of the target tokens seen so far, [N, H, S, E] each."""
    memory: KeyValue
    """Context-attention keys/values of the memory, [B', H, M, E] each (projected once, one per
    example, shared by its beams)."""


@dataclass
class DecoderState:
    """Everything the decoder needs to continue a batch of sequences.

    Rows come in groups of ``group_size`` consecutive rows (the beams of one example) that share
    one memory entry: row r reads memory entry r // group_size, so N = B' x group_size.
    """

    layers: list[LayerCache]
    """One cache per decoder layer."""
    memory_mask: Tensor
    """[B', M] bool, True = real memory token."""
    length: int
    """S, target tokens already consumed (the position of the next token)."""
    group_size: int = 1
    """G, rows per memory entry (beams per example)."""

    def _with(
        self, layers: list[LayerCache], memory_mask: Tensor | None = None, group_size: int | None = None
    ) -> DecoderState:
        return DecoderState(
            layers=layers,
            memory_mask=self.memory_mask if memory_mask is None else memory_mask,
            length=self.length,
            group_size=self.group_size if group_size is None else group_size,
        )

    def reorder(self, indices: Tensor) -> DecoderState:
        """Rows ``indices`` [N'] (long, into the N rows), any of them, repeats allowed.

        General but costly: the memory keys/values are copied per row (group size 1). Beam
        search uses :meth:`tile`, :meth:`reorder_beams` and :meth:`select_examples` instead.
        """
        entries = indices.div(self.group_size, rounding_mode="floor")  # (N',) memory entry per row
        layers = [
            LayerCache(cache.self_attn.index_select(indices), cache.memory.index_select(entries))
            for cache in self.layers
        ]
        return self._with(layers, self.memory_mask.index_select(0, entries), group_size=1)

    def tile(self, beam_size: int) -> DecoderState:
        """Repeat every row ``beam_size`` times (consecutively); the memory is not copied."""
        rows = torch.arange(self.memory_mask.size(0) * self.group_size, device=self.memory_mask.device)
        rows = rows.repeat_interleave(beam_size)  # (N * beam_size,)
        layers = [LayerCache(cache.self_attn.index_select(rows), cache.memory) for cache in self.layers]
        return self._with(layers, group_size=self.group_size * beam_size)

    def reorder_beams(self, indices: Tensor) -> DecoderState:
        """Rows ``indices`` [N]: ``indices[r]`` must be a row of r's own group (a beam of the same
        example). Only the self-attention caches move."""
        layers = [LayerCache(cache.self_attn.index_select(indices), cache.memory) for cache in self.layers]
        return self._with(layers)

    def rows_of(self, examples: Tensor) -> Tensor:
        """The rows [b * G] of memory entries ``examples`` [b] (long), group by group."""
        G = self.group_size
        return (examples.unsqueeze(1) * G + torch.arange(G, device=examples.device)).view(-1)  # (b*G,)

    def select_examples(self, examples: Tensor) -> DecoderState:
        """Keep memory entries ``examples`` [b] (long, into the B' entries) and their rows."""
        rows = self.rows_of(examples)
        layers = [
            LayerCache(cache.self_attn.index_select(rows), cache.memory.index_select(examples))
            for cache in self.layers
        ]
        return self._with(layers, self.memory_mask.index_select(0, examples))


@dataclass
class DecoderOutput:
    """Result of :class:`TransformerDecoder`."""

    states: Tensor
    """[N, L, D] final LayerNorm output for the L new tokens."""
    state: DecoderState
    """The state after consuming them."""


@dataclass
class DecoderLayerOutput:
    states: Tensor
    """[N, L, D]"""
    cache: LayerCache


class DecoderLayer(nn.Module):
    """Pre-LN causal self-attention, context attention over the memory, then the feed-forward."""

    def __init__(self, d_model: int, *, heads: int, ff_size: int, dropout: float):
        super().__init__()
        self.self_attn_norm = nn.LayerNorm(d_model, eps=LAYER_NORM_EPS)
        self.self_attn = MultiHeadAttention(d_model, heads=heads, dropout=dropout)
        self.context_norm = nn.LayerNorm(d_model, eps=LAYER_NORM_EPS)
        self.context_attn = MultiHeadAttention(d_model, heads=heads, dropout=dropout)
        self.feed_forward = FeedForward(d_model, ff_size=ff_size, dropout=dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self, x: Tensor, cache: LayerCache, *, memory_mask: Tensor, group_size: int = 1
    ) -> DecoderLayerOutput:
        """x: [N, L, D] new tokens; cache holds S earlier ones; memory_mask: bool [B', M] with
        N = B' x group_size (row r reads memory entry r // group_size)."""
        N, L, D = x.shape
        h = self.self_attn_norm(x)
        self_kv = cache.self_attn.append(self.self_attn.project_key_value(h))  # (N, H, S+L, E)
        causal = causal_mask(L, self_kv.length, device=x.device)
        x = x + self.dropout(self.self_attn.attend(h, self_kv, mask=causal))
        query = self.context_norm(x).reshape(-1, group_size * L, D)  # (B', G*L, D): beams as queries
        context = self.context_attn.attend(
            query,
            cache.memory,
            mask=memory_mask.unsqueeze(1),  # (B', 1, M)
        ).view(N, L, D)
        x = self.feed_forward(x + self.dropout(context))
        return DecoderLayerOutput(
            states=x, cache=LayerCache(self_attn=self_kv, memory=cache.memory)
        )


def causal_mask(new: int, total: int, *, device: torch.device) -> Tensor | None:
    """[1, new, total] bool: the i-th of the last ``new`` positions sees positions <= its own.

    None when ``new == 1`` (the single new token may see everything before it).
    """
    if new == 1:
        return None
    query_pos = torch.arange(total - new, total, device=device).unsqueeze(1)  # (new, 1)
    return (torch.arange(total, device=device) <= query_pos).unsqueeze(0)  # (1, new, total)


class TransformerDecoder(nn.Module):
    """Embeds target tokens (``emb * sqrt(D) + pos``), runs the decoder layers and a final LN.

    Args:
        config: sizes (``d_model``, ``heads``, ``ff_size``, ``decoder_layers``, ``dropout``).
        embeddings: token embedding table [V, D], shared with the encoder and output layer.
    """

    def __init__(self, config: ModelConfig, *, embeddings: nn.Embedding):
        super().__init__()
        self.d_model = config.d_model
        self.heads = config.heads
        self.embeddings = embeddings
        self.register_buffer(
            "positions", sinusoid_table(config.max_positions, config.d_model), persistent=False
        )
        self.dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(
            DecoderLayer(
                config.d_model, heads=config.heads, ff_size=config.ff_size, dropout=config.dropout
            )
            for _ in range(config.decoder_layers)
        )
        self.final_norm = nn.LayerNorm(config.d_model, eps=LAYER_NORM_EPS)

    def init_state(self, memory: Tensor, memory_mask: Tensor) -> DecoderState:
        """Empty self-attention caches and memory keys/values projected once per layer.

        memory: [N, M, D]; memory_mask: bool [N, M], True = real token.
        """
        N, D = memory.size(0), self.d_model
        empty = memory.new_zeros(N, self.heads, 0, D // self.heads)  # (N, H, 0, E)
        layers = [
            LayerCache(
                self_attn=KeyValue(empty, empty),
                memory=layer.context_attn.project_key_value(memory),
            )
            for layer in self.layers
        ]
        return DecoderState(layers=layers, memory_mask=memory_mask, length=0)

    def forward(self, tokens: Tensor, state: DecoderState) -> DecoderOutput:
        """Consume ``tokens`` [N, L], at positions S..S+L-1 where S = ``state.length``."""
        N, L = tokens.shape
        start = state.length
        if start + L > self.positions.size(0):
            raise ValueError(
                f"target length {start + L} exceeds model.max_positions={self.positions.size(0)}"
            )
        x = self.embeddings(tokens) * math.sqrt(self.d_model) + self.positions[start : start + L]
        x = self.dropout(x)  # (N, L, D)
        caches = []
        for layer, cache in zip(self.layers, state.layers, strict=True):
            out = layer(x, cache, memory_mask=state.memory_mask, group_size=state.group_size)
            x = out.states
            caches.append(out.cache)
        new_state = DecoderState(
            layers=caches, memory_mask=state.memory_mask, length=start + L, group_size=state.group_size
        )
        return DecoderOutput(states=self.final_norm(x), state=new_state)
