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
    """Context-attention keys/values of the memory, [N, H, M, E] each (projected once)."""

    def index_select(self, indices: Tensor) -> LayerCache:
        return LayerCache(self.self_attn.index_select(indices), self.memory.index_select(indices))


@dataclass
class DecoderState:
    """Everything the decoder needs to continue a batch of sequences."""

    layers: list[LayerCache]
    """One cache per decoder layer."""
    memory_mask: Tensor
    """[N, M] bool, True = real memory token."""
    length: int
    """S, target tokens already consumed (the position of the next token)."""

    def reorder(self, indices: Tensor) -> DecoderState:
        """Rows ``indices`` [N'] (long, into the N rows) of this state: beam reordering,
        tiling (repeated indices) or dropping finished examples."""
        return DecoderState(
            layers=[cache.index_select(indices) for cache in self.layers],
            memory_mask=self.memory_mask.index_select(0, indices),
            length=self.length,
        )


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

    def forward(self, x: Tensor, cache: LayerCache, *, memory_mask: Tensor) -> DecoderLayerOutput:
        """x: [N, L, D] new tokens; cache holds S earlier ones; memory_mask: bool [N, M]."""
        L = x.size(1)
        h = self.self_attn_norm(x)
        self_kv = cache.self_attn.append(self.self_attn.project_key_value(h))  # (N, H, S+L, E)
        causal = causal_mask(L, self_kv.length, device=x.device)
        x = x + self.dropout(self.self_attn.attend(h, self_kv, mask=causal))
        context = self.context_attn.attend(
            self.context_norm(x),
            cache.memory,
            mask=memory_mask.unsqueeze(1),  # (N, 1, M)
        )
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
            out = layer(x, cache, memory_mask=state.memory_mask)
            x = out.states
            caches.append(out.cache)
        new_state = DecoderState(layers=caches, memory_mask=state.memory_mask, length=start + L)
        return DecoderOutput(states=self.final_norm(x), state=new_state)
