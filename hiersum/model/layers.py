"""Building blocks shared by the encoder and the decoder.

Dimensions
    N  rows of a batch (examples, paragraphs of all examples, or beams)
    L  query length
    M  key length (memory or cached positions)
    D  model width
    H  attention heads
    E  head width, D / H

Masks are boolean with True = real token (may be attended to); they are turned into
the form scaled_dot_product_attention wants only inside :meth:`MultiHeadAttention.attend`, which
calls it through :func:`hiersum.model.attention_kernels.attention` (the kernels it may pick on CUDA).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hiersum.data.packing import PackedGrid, ParagraphBucket, RowChunk
from hiersum.model.attention_kernels import attention

LAYER_NORM_EPS = 1e-6
"""LayerNorm epsilon of every sublayer, as in the official code."""


def sinusoid_frequency(dim: int, device: torch.device | str | None = None) -> Tensor:
    """The angular frequency [dim/2] of each sin/cos channel pair: 10000^(-2i/dim)."""
    return torch.exp(torch.arange(0, dim, 2, dtype=torch.float, device=device) * -(math.log(10000.0) / dim))


def sinusoid_table(length: int, dim: int) -> Tensor:
    """Sinusoid position table of shape [length, dim]: sin on even channels, cos on odd ones.

    Same values as the official ``PositionalEncoding.pe`` (channels interleaved, not
    concatenated).
    """
    position = torch.arange(length, dtype=torch.float).unsqueeze(1)  # (length, 1)
    frequency = sinusoid_frequency(dim)  # (dim/2,)
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)
    return table


def sinusoid_rows(table: Tensor, positions: Tensor, end: int) -> Tensor:
    """The sinusoid rows [N, dim] of ``positions`` [N] (long), all below ``end`` (a bound known on the host: no
    device sync). Below the end of ``table`` ([length, dim], :func:`sinusoid_table`) they are its rows; past it
    (more paragraphs than ``model.max_positions``) every row is computed from the same formula, which is defined
    at any position: the table only caches its first rows."""
    if end <= table.size(0):
        return table.index_select(0, positions)
    angle = positions.to(torch.float).unsqueeze(1) * sinusoid_frequency(table.size(1), table.device)  # (N, dim/2)
    return torch.stack([torch.sin(angle), torch.cos(angle)], -1).flatten(1).to(table.dtype)  # (N, dim) interleaved


@dataclass
class KeyValue:
    """Projected keys and values of one attention, split into heads."""

    keys: Tensor
    """[N, H, M, E]"""
    values: Tensor
    """[N, H, M, E]"""

    @property
    def length(self) -> int:
        """M, the number of key positions."""
        return self.keys.size(2)

    def index_select(self, indices: Tensor) -> KeyValue:
        """Pick rows: ``indices`` [N'] long, into the N rows."""
        return KeyValue(self.keys.index_select(0, indices), self.values.index_select(0, indices))


def open_empty_rows(mask: Tensor) -> Tensor:
    """Let a query whose keys are all masked attend to every key instead (output finite, unused).

    mask: bool [..., L, M], True = may attend. Rows with at least one True are unchanged.
    """
    return mask | ~mask.any(-1, keepdim=True)


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention with H heads (query/key/value projections, optional output one).

    Args:
        d_model: D, width of queries, keys and values.
        heads: H; D must be divisible by H.
        dropout: dropout on the attention probabilities (training only).
        output_projection: apply a final Linear(D, D) to the merged heads.
    """

    def __init__(self, d_model: int, *, heads: int, dropout: float, output_projection: bool = True):
        super().__init__()
        if d_model % heads:
            raise ValueError(f"d_model={d_model} must be divisible by heads={heads}")
        self.heads = heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model) if output_projection else None
        self.dropout = dropout

    def split_heads(self, x: Tensor) -> Tensor:
        """[N, L, D] -> [N, H, L, E]."""
        N, L, D = x.shape
        return x.view(N, L, self.heads, D // self.heads).transpose(1, 2)  # (N, H, L, E)

    def project_key_value(self, memory: Tensor) -> KeyValue:
        """Keys and values of ``memory`` [N, M, D], each [N, H, M, E]."""
        return KeyValue(self.split_heads(self.key(memory)), self.split_heads(self.value(memory)))

    def attend(
        self, query: Tensor, key_value: KeyValue, *, mask: Tensor | None = None, bias: Tensor | None = None
    ) -> Tensor:
        """Attend from ``query`` [N, L, D] to projected keys/values [N, H, M, E].

        mask: bool broadcastable to [N, L, M] (e.g. [N, 1, M] or [1, L, M]), True = may
        attend; None attends everywhere. A query with no key to attend to gets a finite,
        meaningless output. bias: float broadcastable to [N, L, M], added to the attention
        scores of every head (None: no bias). Returns [N, L, D].
        """
        return self.attend_prepared(query, key_value, attention_mask(mask, bias))

    def attend_prepared(self, query: Tensor, key_value: KeyValue, attn_mask: Tensor | None) -> Tensor:
        """:meth:`attend` with the mask already made by :func:`attention_mask` ([N, 1, L, M],
        broadcastable; None attends everywhere), for callers that reuse one mask at every step."""
        return self.attend_heads(self.split_heads(self.query(query)), key_value, attn_mask)

    def attend_heads(self, q: Tensor, key_value: KeyValue, attn_mask: Tensor | None) -> Tensor:
        """:meth:`attend_prepared` with the queries already projected and split, q [N, H, L, E]
        (e.g. by :meth:`project_query_key_value`). Returns [N, L, D]."""
        N, H, L, E = q.shape
        if attn_mask is not None and attn_mask.is_floating_point():
            attn_mask = attn_mask.to(q.dtype)  # a float mask must match the queries (autocast)
        context = attention(q, key_value.keys, key_value.values, attn_mask,
                            self.dropout if self.training else 0.0)  # (N, H, L, E)
        context = context.transpose(1, 2).reshape(N, L, H * E)  # (N, L, D)
        return context if self.out is None else self.out(context)

    def stacked_query_key_value(self) -> tuple[Tensor, Tensor]:
        """The query, key and value projections stacked into one: weight [3*D, D], bias [3*D]
        (a new tensor: it follows the parameters only until they change)."""
        weight = torch.cat([self.query.weight, self.key.weight, self.value.weight])  # (3*D, D)
        bias = torch.cat([self.query.bias, self.key.bias, self.value.bias])  # (3*D,)
        return weight, bias

    def project_query_key_value(self, x: Tensor, stacked: tuple[Tensor, Tensor]) -> tuple[Tensor, KeyValue]:
        """Queries [N, H, L, E] and keys/values of ``x`` [N, L, D] in one matrix product, with the
        weights of :meth:`stacked_query_key_value` (made once by the caller, e.g. per decoding run)."""
        N, L, D = x.shape
        qkv = F.linear(x, *stacked).view(N, L, 3, self.heads, D // self.heads)  # (N, L, 3, H, E)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # 3 x (N, H, L, E)
        return q, KeyValue(k, v)

    def self_attend_buckets(self, x: Tensor, layout: PackedGrid | RowChunk) -> Tensor:
        """Self-attention within each paragraph of the packed token rows ``x`` [N, D] (see
        :mod:`hiersum.data.packing`): projections on the packed rows, attention per bucket of
        paragraphs of one width class (padded to the bucket's width W only). Returns [N, D]."""
        N, D = x.shape
        H, E = self.heads, D // self.heads
        qkv = F.linear(x, *self.stacked_query_key_value())  # (N, 3*D): one matmul for the three projections
        contexts = []
        for bucket, rows in zip(layout.buckets, bucket_rows(qkv, layout.buckets), strict=True):
            n, W = bucket.gather_index.shape
            q, k, v = rows.view(n, W, 3, H, E).permute(2, 0, 3, 1, 4).unbind(0)  # 3 x (n, H, W, E)
            context = attention(q, k, v, bucket.attn_mask, self.dropout if self.training else 0.0)  # (n, H, W, E)
            contexts.append(context.transpose(1, 2).reshape(n * W, D))  # (n*W, H*E)
        # (N, D) in packed order; no bucket when there is no real token
        context = torch.cat(contexts).index_select(0, layout.bucket_row_index) if contexts else x.new_zeros(0, D)
        return context if self.out is None else self.out(context)

    def forward(
        self, query: Tensor, memory: Tensor, *, mask: Tensor | None = None, bias: Tensor | None = None
    ) -> Tensor:
        """Attend from ``query`` [N, L, D] to ``memory`` [N, M, D]; mask and bias as in :meth:`attend`."""
        return self.attend(query, self.project_key_value(memory), mask=mask, bias=bias)

    def weights(
        self, query: Tensor, memory: Tensor, *, mask: Tensor | None = None, bias: Tensor | None = None
    ) -> Tensor:
        """Attention probabilities [N, H, L, M] (no dropout), for inspection only."""
        q = self.split_heads(self.query(query))  # (N, H, L, E)
        k = self.split_heads(self.key(memory))  # (N, H, M, E)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))  # (N, H, L, M)
        attn_mask = attention_mask(mask, bias)  # (N, 1, L, M) or None
        if attn_mask is not None and attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        elif attn_mask is not None:
            scores = scores + attn_mask
        return scores.softmax(-1)


def bucket_rows(rows: Tensor, buckets: tuple[ParagraphBucket, ...]) -> tuple[Tensor, ...]:
    """The packed ``rows`` [N, C] each bucket reads, [n * W, C] per bucket, taken by one ``index_select`` and split:
    its backward fills one zero [N, C] gradient and adds into it once, where a gather per bucket filled one each
    (seven for paragraphs of up to 64 tokens) and autograd summed them. The gradients are the same to the bit: a
    row is read by one real place, and the padding places that also read it get exact zeros (masked keys,
    dropped queries)."""
    if not buckets:
        return ()
    index = torch.cat([bucket.gather_index.view(-1) for bucket in buckets])  # (sum n*W,)
    return rows.index_select(0, index).split([bucket.gather_index.numel() for bucket in buckets])


def attention_mask(mask: Tensor | None, bias: Tensor | None) -> Tensor | None:
    """The ``attn_mask`` of scaled_dot_product_attention, [N, 1, L, M] (broadcast over heads).

    Boolean (True = may attend) without ``bias``; with it, the float bias with -inf where
    ``mask`` forbids. Rows with nothing to attend to are opened (see :func:`open_empty_rows`).
    """
    allowed = None if mask is None else open_empty_rows(mask).unsqueeze(1)  # (N, 1, L, M)
    if bias is None:
        return allowed
    bias = bias.unsqueeze(1)  # (N, 1, L, M)
    return bias if allowed is None else bias.masked_fill(~allowed, float("-inf"))


class FeedForward(nn.Module):
    """Position-wise feed-forward with its own pre-LayerNorm and residual, as the official one.

    forward(x) = x + dropout(W_out(dropout(relu(W_in(LN(x)))))); x [..., D] -> [..., D].
    """

    def __init__(self, d_model: int, *, ff_size: int, dropout: float):
        super().__init__()
        self.norm = nn.LayerNorm(d_model, eps=LAYER_NORM_EPS)
        self.w_in = nn.Linear(d_model, ff_size)
        self.w_out = nn.Linear(ff_size, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        hidden = self.dropout(F.relu(self.w_in(self.norm(x))))
        return x + self.dropout(self.w_out(hidden))
