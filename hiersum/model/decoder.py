"""Pre-LN transformer decoder over the packed encoder memory, with a key/value cache.

Dimensions
    N  rows (examples, or examples x beams while decoding)
    L  new target tokens fed in this call (all of them when teacher forcing, 1 per step)
    S  target tokens consumed so far (cache length)
    C  cache capacity (positions preallocated, C >= S)
    M  packed memory length
    D  model width
    H  heads
    E  head width, D / H

Masks are boolean with True = real token. Teacher forcing and step-by-step decoding run the
same code: a call writes the keys/values of its L tokens into the self-attention cache at
positions S..S+L-1, and the memory keys and values are projected once in
:meth:`TransformerDecoder.init_state`.

The self-attention cache and the decoder state live in :mod:`hiersum.model.cache`.

While beam searching, the N rows are B' examples x G beams, beams of an example consecutive.
The memory keys/values stay per example ([B', H, M, E]); the G beams of an example are folded
into the query length of the context attention, so reordering beams never copies the memory.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch
from torch import Tensor, nn

from hiersum.config import ModelConfig
from hiersum.model.cache import DecoderState, SelfAttentionCache, StepWeights, write_key_value, write_key_value_at
from hiersum.model.decoder_contract import DecoderOutput
from hiersum.model.layers import (
    LAYER_NORM_EPS,
    FeedForward,
    KeyValue,
    MultiHeadAttention,
    attention_mask,
    sinusoid_table,
)


class DecoderLayer(nn.Module):
    """Pre-LN causal self-attention, context attention over the memory, then the feed-forward."""

    def __init__(self, d_model: int, *, heads: int, ff_size: int, dropout: float,
                 attention_dropout: float):
        super().__init__()
        self.self_attn_norm = nn.LayerNorm(d_model, eps=LAYER_NORM_EPS)
        self.self_attn = MultiHeadAttention(d_model, heads=heads, dropout=attention_dropout)
        self.context_norm = nn.LayerNorm(d_model, eps=LAYER_NORM_EPS)
        self.context_attn = MultiHeadAttention(d_model, heads=heads, dropout=attention_dropout)
        self.feed_forward = FeedForward(d_model, ff_size=ff_size, dropout=dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        x: Tensor,
        *,
        memory: KeyValue,
        memory_attn_mask: Tensor | None,
        group_size: int,
        cache: Tensor | None,
        start: int | Tensor,
        self_qkv: tuple[Tensor, Tensor] | None = None,
    ) -> Tensor:
        """x: [N, L, D], the new tokens at positions S..S+L-1 (S = ``start``). ``memory``: this layer's
        context keys/values [B', H, M, E] (row r reads entry r // ``group_size``), ``memory_attn_mask``
        [B', 1, 1, M] or None. ``cache``: this layer's self-attention buffer [N, 2, H, C, E] that the new
        keys/values are written into (None: no cache, S must be 0). ``start`` as a long tensor [1] (L = 1):
        a static step, that attends over all C cache positions with those > S masked, so that its shapes
        do not change from step to step. ``self_qkv``: the self-attention's stacked projections
        (:class:`StepWeights`), None: its three Linear layers. Returns [N, L, D].

        The layer is given its own tensors rather than its number, so that one compiled graph serves
        every layer (an index would be a guard, and a recompilation per layer)."""
        N, L, D = x.shape
        h = self.self_attn_norm(x)
        if self_qkv is None:
            q, self_kv = self.self_attn.split_heads(self.self_attn.query(h)), self.self_attn.project_key_value(h)
        else:
            q, self_kv = self.self_attn.project_query_key_value(h, self_qkv)  # (N, H, L, E) each
        if isinstance(start, Tensor):
            self_kv = write_key_value_at(cache, start, self_kv)  # (N, H, C, E)
            causal = (torch.arange(self_kv.length, device=x.device) <= start).view(1, 1, -1)  # (1, 1, C)
        else:
            if cache is not None:
                self_kv = write_key_value(cache, start, self_kv)  # (N, H, S+L, E)
            causal = causal_mask(L, self_kv.length, device=x.device)
        x = x + self.dropout(self.self_attn.attend_heads(q, self_kv, attention_mask(causal, None)))
        query = self.context_norm(x).reshape(-1, group_size * L, D)  # (B', G*L, D): beams as queries
        context = self.context_attn.attend_prepared(query, memory, memory_attn_mask)
        return self.feed_forward(x + self.dropout(context.view(N, L, D)))


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
        config: sizes (``d_model``, ``heads``, ``ff_size``, ``decoder_layers``) and rates (``dropout``,
            ``attention_dropout``).
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
                config.d_model, heads=config.heads, ff_size=config.ff_size, dropout=config.dropout,
                attention_dropout=config.attention_dropout_rate,
            )
            for _ in range(config.decoder_layers)
        )
        self.final_norm = nn.LayerNorm(config.d_model, eps=LAYER_NORM_EPS)

    def forward_flops(self, memory_lengths: Tensor, tgt_mask: Tensor) -> int:
        """The forward FLOPs of the layers on the real tokens (the optional capability of the decoder contract):
        ``memory_lengths`` long [B] real memory positions (M each), ``tgt_mask`` bool [B, S]. Per layer,
        self-attention 8 S D^2 + 4 D sum(S^2), context attention 4 S D^2 + 4 M D^2 + 4 D sum(S M), feed-forward
        4 S D F (:mod:`hiersum.model.flops`)."""
        D, F = self.d_model, self.layers[0].feed_forward.w_in.out_features if len(self.layers) else 0
        target = tgt_mask.sum(-1).long()  # (B,)
        S, M = int(target.sum()), int(memory_lengths.sum())
        layer = (8 * S * D * D + 4 * D * int((target * target).sum())  # self-attention
                 + 4 * S * D * D + 4 * M * D * D + 4 * D * int((target * memory_lengths).sum())  # context attention
                 + 4 * S * D * F)  # feed-forward
        return len(self.layers) * layer

    def init_state(
        self, memory: Tensor, memory_mask: Tensor, *, cache_capacity: int | None = 0
    ) -> DecoderState:
        """A state before any target token, with the memory keys/values projected once per layer.

        memory: [N, M, D]; memory_mask: bool [N, M], True = real token. ``cache_capacity``:
        target positions to preallocate in the self-attention cache (it grows when a call needs
        more); None keeps no cache, for feeding a whole target in one call.
        """
        memory_attn_mask = None
        # Dropping an all-real mask lets attention take its unmasked kernel; the check reads a tensor's
        # value, so a compiled region keeps the mask instead (the same numbers).
        if torch.compiler.is_compiling() or not bool(memory_mask.all()):
            memory_attn_mask = attention_mask(memory_mask.unsqueeze(1), None)  # (N, 1, 1, M)
        cache, step_weights = None, None
        if cache_capacity is not None:
            cache = SelfAttentionCache.allocate(
                memory.size(0), layers=len(self.layers), heads=self.heads,
                head_dim=self.d_model // self.heads, capacity=cache_capacity, like=memory,
            )
            step_weights = StepWeights([layer.self_attn.stacked_query_key_value() for layer in self.layers])
        return DecoderState(
            memory=[layer.context_attn.project_key_value(memory) for layer in self.layers],
            memory_attn_mask=memory_attn_mask,
            self_attn=cache,
            length=0,
            step_weights=step_weights,
        )

    def forward(self, tokens: Tensor, state: DecoderState) -> DecoderOutput:
        """Consume ``tokens`` [N, L], at positions S..S+L-1 where S = ``state.length``.

        The returned state shares (and this call writes into) the cache of ``state``.
        """
        N, L = tokens.shape
        start = state.length
        if start + L > self.positions.size(0):
            raise ValueError(
                f"target length {start + L} exceeds model.max_positions={self.positions.size(0)}"
            )
        if state.self_attn is None and start > 0:
            raise ValueError("this decoder state keeps no self-attention cache and cannot be continued")
        cache = None if state.self_attn is None else state.self_attn.reserve(start + L, length=start)
        x = self.embeddings(tokens) * math.sqrt(self.d_model) + self.positions[start : start + L]
        states = self._layers(x, state, cache, start)
        return DecoderOutput(states=states, state=replace(state, self_attn=cache, length=start + L))

    def static_forward(self, tokens: Tensor, state: DecoderState, position: Tensor) -> Tensor:
        """One token per row, ``tokens`` [N, 1], at ``position`` (long [1], = ``state.length``), over the
        fixed-size cache of ``state`` (written in place); returns the states [N, 1, D]. Reads no Python
        number that changes from step to step, so one compiled graph serves every step; the caller
        advances ``state.length`` and checks the capacity (:meth:`HierSum.static_step`)."""
        x = self.embeddings(tokens) * math.sqrt(self.d_model) + self.positions.index_select(0, position)
        return self._layers(x, state, state.self_attn, position)

    def _layers(self, x: Tensor, state: DecoderState, cache: SelfAttentionCache | None, start: int | Tensor) -> Tensor:
        """Dropout, the layers (with the state's memory, ``cache`` and step weights) and the final LN; x [N, L, D]."""
        x = self.dropout(x)  # (N, L, D)
        buffers = [None] * len(self.layers) if cache is None else cache.buffers
        stacked = [None] * len(self.layers) if state.step_weights is None else state.step_weights.self_qkv
        for layer, memory, buffer, self_qkv in zip(self.layers, state.memory, buffers, stacked, strict=True):
            x = layer(x, memory=memory, memory_attn_mask=state.memory_attn_mask, group_size=state.group_size,
                      cache=buffer, start=start, self_qkv=self_qkv)
        return self.final_norm(x)
