"""Hierarchical encoder (paragraph-local and inter-paragraph layers) and the flat baseline encoder.

Dimensions
    B  batch
    P  paragraphs per example
    T  tokens per paragraph
    D  model width
    H  heads (local attention heads, or pooling heads in an inter layer)
    E  head width, D / H
    M  packed memory length: the most real tokens of any example in the batch
    L  source length of the flat encoder (paragraphs joined into one sequence)

Masks are boolean with True = real token; ``src_mask`` is [B, P, T] ([B, L] flat). An empty
paragraph (all padding) is allowed anywhere: it changes nothing at real positions.

Both encoders satisfy :class:`hiersum.model.encoder_contract.Encoder`. The hierarchical layers compute on the real
tokens only, packed rows [N, D] in the order of a :class:`~hiersum.data.packing.PackedGrid`; the padded-grid
reference they are tested against (the same parameters over the whole [B, P, T] grid) lives in
``tests/helpers/padded.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from hiersum.config import ModelConfig
from hiersum.data.packing import PackedGrid, RowChunk
from hiersum.model.encoder_contract import EncoderOutput
from hiersum.model.layers import LAYER_NORM_EPS, FeedForward, MultiHeadAttention, sinusoid_rows, sinusoid_table
from hiersum.model.pooling import MultiHeadPooling

CHUNK_ROWS = 1 << 16
"""Packed rows above which the encoder layers run over runs of whole paragraphs of at most this many rows, one
run at a time (:meth:`PackedGrid.row_chunks`), instead of over all rows at once: the paragraph-local layers whole
(they never look across paragraphs), an inter-paragraph layer's pooling and feed-forward (only its paragraph
attention sees all paragraphs, as [B, P] vectors). This bounds the temporaries (q/k/v, the attention's padded
buckets, pooled values, the feed-forward's hidden states) by the chunk instead of by the input. It is done where
it saves memory: without gradients (summarizing), or with activation checkpointing (``recompute``), where each
chunk's activations are recomputed in the backward pass instead of kept. Inputs up to this size, and training
without recompute, take the one-pass path, whose results are bitwise those of earlier versions; chunked results
equal the one pass to float rounding (the matrix products see other row counts). Not when attention is returned
(the pooling weights are then kept whole)."""

RowFunction = Callable[[Tensor, "PackedGrid | RowChunk"], Tensor]
"""``f(rows, rows_layout)``: a computation on the packed rows [S, D] of whole paragraphs, given their layout (the
:class:`PackedGrid` for all rows, or one :class:`RowChunk`)."""


def row_chunks(layout: PackedGrid, recompute: bool) -> list[RowChunk] | None:
    """The chunks the encoder's layers run over (see :data:`CHUNK_ROWS`), or None for one pass."""
    if layout.n_rows <= CHUNK_ROWS or (torch.is_grad_enabled() and not recompute):
        return None
    return layout.row_chunks(CHUNK_ROWS)


def run_rows(function: RowFunction, x: Tensor, layout: PackedGrid, chunks: list[RowChunk] | None,
             recompute: bool) -> Tensor:
    """``function`` over the packed rows ``x`` [N, D]: in one pass, or chunk by chunk into one [N, D] result;
    with ``recompute`` (and gradients) under activation checkpointing, each call's activations recomputed in the
    backward pass (:func:`torch.utils.checkpoint.checkpoint`) instead of kept."""
    def call(rows: Tensor, rows_layout: PackedGrid | RowChunk) -> Tensor:
        if recompute and torch.is_grad_enabled():
            return checkpoint(function, rows, rows_layout, use_reentrant=False)
        return function(rows, rows_layout)

    if chunks is None:
        return call(x, layout)
    out = torch.empty_like(x)
    for chunk in chunks:
        out[chunk.start:chunk.stop] = call(x[chunk.start:chunk.stop], chunk)  # (S, D)
    return out


@dataclass
class InterLayerOutput:
    """Result of :class:`InterLayer`."""

    states: Tensor
    """[N, D], the packed rows."""
    pooling_weights: Tensor | None
    """[B, P, H, T] (zero at padding), or None when attention is not requested."""
    attention: Tensor | None
    """[B, H, P, P] or None when not requested."""


class SelfAttentionBlock(nn.Module):
    """Pre-LN self-attention, residual, then the feed-forward (with its own pre-LN and residual): the sublayers
    of :class:`LocalLayer` and :class:`SequenceLayer`, which differ only in what the attention sees."""

    def __init__(self, d_model: int, *, heads: int, ff_size: int, dropout: float,
                 attention_dropout: float):
        super().__init__()
        self.norm = nn.LayerNorm(d_model, eps=LAYER_NORM_EPS)
        self.self_attn = MultiHeadAttention(d_model, heads=heads, dropout=attention_dropout)
        self.dropout = nn.Dropout(dropout)
        self.feed_forward = FeedForward(d_model, ff_size=ff_size, dropout=dropout)

    def add_context(self, x: Tensor, context: Tensor) -> Tensor:
        """The residual of the attention's ``context`` (after dropout), then the feed-forward; [..., D]."""
        return self.feed_forward(x + self.dropout(context))


class LocalLayer(SelfAttentionBlock):
    """Self-attention within each paragraph, on the packed token rows of a :class:`PackedGrid` (or of one
    :class:`RowChunk` of it)."""

    recompute: bool = False
    """Activation checkpointing in training (:meth:`hiersum.model.HierSum.recompute_encoder`; see
    :data:`CHUNK_ROWS`)."""

    def forward(self, x: Tensor, layout: PackedGrid | RowChunk) -> Tensor:
        """x: [N, D], the real tokens in the order of ``layout``. Returns [N, D]."""
        return self.add_context(x, self.self_attn.self_attend_buckets(self.norm(x), layout))  # (N, D)

    def forward_flops(self, lengths: Tensor) -> int:
        """Forward FLOPs on the real tokens, ``lengths`` long [B, P] per paragraph: N (8 D^2 + 4 D F) + 4 D sum(L^2)
        (:mod:`hiersum.model.flops`)."""
        D, F = self.feed_forward.w_in.in_features, self.feed_forward.w_in.out_features
        return int(lengths.sum()) * (8 * D * D + 4 * D * F) + 4 * D * int((lengths * lengths).sum())


class SequenceLayer(SelfAttentionBlock):
    """Self-attention over whole sequences (the flat encoder's layer)."""

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        """x: [B, L, D]; mask: bool [B, L], True = real token. Returns [B, L, D]."""
        h = self.norm(x)
        return self.add_context(x, self.self_attn(h, h, mask=mask.unsqueeze(1)))  # (B, L, D)


class InterLayer(nn.Module):
    """Inter-paragraph layer: pool each paragraph per head, let paragraphs attend to each other,
    add the resulting paragraph vector to every token of the paragraph, then the feed-forward.

    The paragraph attention is one single-head attention of width E whose weights are shared by
    all H pooling heads (heads folded into the batch), exactly as the official code. There is no
    token-to-token attention in this layer.

    With ``graph=True`` the paragraph attention scores get an additive bias ``w_h * G[b, i, j]`` from
    a paragraph graph G [B, P, P] (Liu & Lapata's graph-informed attention), with one learned weight
    w_h per pooling head, initialised to 1 so that the graph acts from the first step.
    """

    def __init__(self, d_model: int, *, heads: int, ff_size: int, dropout: float,
                 attention_dropout: float, graph: bool = False):
        super().__init__()
        if d_model % heads:
            raise ValueError(f"d_model={d_model} must be divisible by inter heads={heads}")
        self.heads = heads
        head_width = d_model // heads
        self.norm = nn.LayerNorm(d_model, eps=LAYER_NORM_EPS)
        self.pooling = MultiHeadPooling(d_model, heads=heads, dropout=attention_dropout)
        self.head_norm = nn.LayerNorm(head_width, eps=LAYER_NORM_EPS)
        self.inter_attn = MultiHeadAttention(
            head_width, heads=1, dropout=attention_dropout, output_projection=False
        )
        self.out = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        self.feed_forward = FeedForward(d_model, ff_size=ff_size, dropout=dropout)
        self.graph_weight = nn.Parameter(torch.ones(heads)) if graph else None
        self.recompute = False
        """Activation checkpointing in training, as :attr:`LocalLayer.recompute`."""

    def forward_flops(self, lengths: Tensor) -> int:
        """Forward FLOPs on the real tokens, ``lengths`` long [B, P] per paragraph (R real paragraphs, E = D / H):
        pooling N (2 D H + 2 D^2), paragraph attention 6 R H E^2 + 4 E H sum(P^2), output 2 R D^2, feed-forward
        4 N D F (:mod:`hiersum.model.flops`)."""
        D, F, H = self.out.in_features, self.feed_forward.w_in.out_features, self.heads
        E = D // H
        N = int(lengths.sum())
        paragraphs = (lengths > 0).sum(-1)  # (B,) real paragraphs of each example
        R = int(paragraphs.sum())
        pooling = N * (2 * D * H + 2 * D * D)
        attention = 6 * R * H * E * E + 4 * E * H * int((paragraphs * paragraphs).sum()) + 2 * R * D * D
        return pooling + attention + 4 * N * D * F

    def graph_bias(self, graph: Tensor | None, B: int, P: int) -> Tensor | None:
        """The additive score bias [B*H, P, P] of a paragraph graph [B, P, P] (None without a graph)."""
        if self.graph_weight is None:
            return None
        if graph is None or graph.shape != (B, P, P):
            found = None if graph is None else tuple(graph.shape)
            raise ValueError(f"this model (model.graph) needs paragraph_graph of shape {(B, P, P)}, found {found}")
        bias = self.graph_weight.view(1, -1, 1, 1) * graph.unsqueeze(1).to(self.graph_weight.dtype)  # (B, H, P, P)
        return bias.reshape(B * self.heads, P, P)

    def forward(
        self, x: Tensor, layout: PackedGrid, *, graph: Tensor | None = None, return_attention: bool = False
    ) -> InterLayerOutput:
        """x: [N, D], the real tokens in the order of ``layout``; graph: float [B, P, P] (used only with
        ``graph=True``). Returns the states [N, D] and, when asked, the pooling weights and the attention."""
        B, P = layout.real_paragraphs.shape  # sizes of tensors, not Python values: dynamic when compiled
        N, D = x.shape
        H, E = self.heads, D // self.heads
        chunks = None if return_attention else row_chunks(layout, self.recompute)
        pooling_weights = None
        if return_attention:
            pooled = self.pooling(self.norm(x), layout.paragraph_of_row, layout.n_paragraphs)  # (R, H, E)
            paragraph_vectors = pooled.vectors
            pooling_weights = layout.scatter_to_grid(pooled.weights).permute(0, 1, 3, 2)  # (B, P, H, T)
        elif chunks is None:
            paragraph_vectors = self.pool(x, layout.paragraph_of_row, layout.n_paragraphs)  # (R, H, E)
        else:  # each chunk's paragraphs pooled from its rows alone
            paragraph_vectors = torch.cat([
                self.pool(x[c.start:c.stop], layout.paragraph_of_row[c.start:c.stop] - c.first_paragraph,
                          c.n_paragraphs) for c in chunks
            ])  # (R, H, E)
        vectors = paragraph_vectors.new_zeros(B * P, H, E).index_copy(0, layout.paragraph_grid_index, paragraph_vectors)
        update, attention = self.attend_paragraphs(vectors.view(B, P, H, E), layout.real_paragraphs, graph,
                                                   return_attention)  # (B, P, D)
        update = update.view(B * P, D)

        def add_update(rows: Tensor, rows_layout: PackedGrid | RowChunk) -> Tensor:
            start, stop = (rows_layout.start, rows_layout.stop) if isinstance(rows_layout, RowChunk) else (0, N)
            return self.feed_forward(rows + update.index_select(0, layout.grid_paragraph_of_row[start:stop]))

        states = run_rows(add_update, x, layout, chunks, self.recompute)  # (N, D)
        return InterLayerOutput(states=states, pooling_weights=pooling_weights, attention=attention)

    def pool(self, rows: Tensor, segment: Tensor, n_segments: int) -> Tensor:
        """The pooled vectors [R', H, E] of the ``n_segments`` paragraphs whose packed rows are ``rows`` [S, D]
        (``segment`` [S]: the paragraph 0..R'-1 of each row), recomputed in the backward pass with
        :attr:`recompute`."""
        def pooled(h: Tensor) -> Tensor:
            return self.pooling(self.norm(h), segment, n_segments).vectors

        if self.recompute and torch.is_grad_enabled():
            return checkpoint(pooled, rows, use_reentrant=False)
        return pooled(rows)

    def attend_paragraphs(
        self, vectors: Tensor, real: Tensor, graph: Tensor | None, return_attention: bool
    ) -> tuple[Tensor, Tensor | None]:
        """Paragraph-to-paragraph attention of the pooled ``vectors`` [B, P, H, E] (zero for an empty
        paragraph); real: bool [B, P], True = paragraph with real tokens. Returns the update of each
        paragraph [B, P, D] (after the output projection and dropout) and, when asked, the attention
        [B, H, P, P]."""
        B, P, H, E = vectors.shape
        paragraphs = self.head_norm(vectors).transpose(1, 2).reshape(B * H, P, E)  # (B*H, P, E)
        keys = real.repeat_interleave(H, dim=0).unsqueeze(1)  # (B*H, 1, P)
        bias = self.graph_bias(graph, B, P)  # (B*H, P, P) or None
        context = self.inter_attn(paragraphs, paragraphs, mask=keys, bias=bias)  # (B*H, P, E)
        context = context.view(B, H, P, E).transpose(1, 2).reshape(B, P, H * E)  # (B, P, D)
        attention = None
        if return_attention:
            attention = self.inter_attn.weights(paragraphs, paragraphs, mask=keys, bias=bias).view(B, H, P, P)
        return self.dropout(self.out(context)), attention


def check_grid(src: Tensor, src_mask: Tensor) -> None:
    """Refuse ``src`` / ``src_mask`` that are not both [B, P, T]."""
    if src.shape != src_mask.shape or src.dim() != 3:
        raise ValueError(f"src and src_mask must both be [B, P, T]; found {tuple(src.shape)} "
                         f"and {tuple(src_mask.shape)}")


def hierarchical_layers(config: ModelConfig, width: int) -> nn.ModuleList:
    """``config.encoder_layers`` layers of width ``width``: those whose index is in
    ``config.inter_layers`` are :class:`InterLayer` (graph-biased when ``config.graph`` is set), the
    others paragraph-local :class:`LocalLayer`."""
    inter = {int(i) for i in config.inter_layers}
    graph = config.graph != "none"
    rates = {"dropout": config.dropout, "attention_dropout": config.attention_dropout_rate}
    return nn.ModuleList(
        InterLayer(width, heads=config.inter_heads, ff_size=config.ff_size, graph=graph, **rates)
        if i in inter
        else LocalLayer(width, heads=config.heads, ff_size=config.ff_size, **rates)
        for i in range(config.encoder_layers)
    )


def run_local_layers(layers: list[LocalLayer], x: Tensor, layout: PackedGrid) -> Tensor:
    """Consecutive paragraph-local ``layers`` over the packed rows ``x`` [N, D]: in one pass, or one
    :class:`RowChunk` at a time (see :data:`CHUNK_ROWS`). Returns [N, D]."""
    if not layers:
        return x
    recompute = layers[0].recompute

    def run(rows: Tensor, rows_layout: PackedGrid | RowChunk) -> Tensor:
        for layer in layers:
            rows = layer(rows, rows_layout)
        return rows

    return run_rows(run, x, layout, row_chunks(layout, recompute), recompute)


def run_packed_layers(
    layers: nn.ModuleList, final_norm: nn.Module, x: Tensor, layout: PackedGrid, *, ids: Tensor,
    paragraph_graph: Tensor | None, return_attention: bool,
) -> EncoderOutput:
    """``layers`` (of :func:`hierarchical_layers`) then ``final_norm`` over the real tokens: ``x`` [N, D] holds the
    input states of the packed rows of ``layout``, ``ids`` [N] their token ids; the memory is the real tokens packed
    example by example (``memory_ids`` their ids)."""
    pooling_weights, inter_attention, local = [], [], []
    for layer in layers:
        if isinstance(layer, InterLayer):
            x = run_local_layers(local, x, layout)
            local = []
            out = layer(x, layout, graph=paragraph_graph, return_attention=return_attention)
            x = out.states
            pooling_weights.append(out.pooling_weights)
            inter_attention.append(out.attention)
        else:
            local.append(layer)
    x = final_norm(run_local_layers(local, x, layout))  # (N, D)
    return EncoderOutput(
        token_states=layout.scatter_to_grid(x),
        memory=layout.scatter_to_memory(x),
        memory_mask=layout.memory_mask,
        memory_ids=layout.scatter_to_memory(ids.unsqueeze(-1)).squeeze(-1),  # (B, M)
        pooling_weights=pooling_weights if return_attention else None,
        inter_attention=inter_attention if return_attention else None,
    )


class HierarchicalEncoder(nn.Module):
    """Embeds a [B, P, T] grid of token ids and runs local and inter-paragraph layers.

    Input: ``emb(token) * sqrt(D) + [pos(token index in paragraph) || pos(paragraph index)]``,
    each position table of width D/2.

    Args:
        config: sizes; ``config.inter_layers`` lists the (0-based) inter layers.
        embeddings: token embedding table [V, D], shared with the decoder and output layer.
    """

    def __init__(self, config: ModelConfig, *, embeddings: nn.Embedding):
        super().__init__()
        D = config.d_model
        self.d_model = D
        self.embeddings = embeddings
        self.register_buffer(
            "positions", sinusoid_table(config.max_positions, D // 2), persistent=False
        )
        self.dropout = nn.Dropout(config.dropout)
        self.layers = hierarchical_layers(config, D)
        self.final_norm = nn.LayerNorm(D, eps=LAYER_NORM_EPS)

    def forward_flops(self, src_mask: Tensor) -> int:
        """The forward FLOPs of the layers on the real tokens of ``src_mask`` bool [B, P, T] (the optional
        capability of the encoder contract that :mod:`hiersum.model.flops` counts with)."""
        lengths = src_mask.sum(-1).long()  # (B, P) real tokens of each paragraph
        return sum(layer.forward_flops(lengths) for layer in self.layers)

    def embed(self, ids: Tensor, layout: PackedGrid) -> Tensor:
        """The input states of the real tokens of a grid, ``ids`` [N] (``layout.pack(src)``): packed rows [N, D]
        (after dropout). Positions past the table (``model.max_positions``: paragraphs or tokens) are computed
        (:func:`sinusoid_rows`)."""
        P, T = layout.shape[1:]
        positions = torch.cat(
            [sinusoid_rows(self.positions, layout.token_position, T),
             sinusoid_rows(self.positions, layout.paragraph_position, P)], -1
        )  # (N, D)
        return self.dropout(self.embeddings(ids) * math.sqrt(self.d_model) + positions)

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor,
        *,
        paragraph_graph: Tensor | None = None,
        return_attention: bool = False,
        layout: PackedGrid | None = None,
    ) -> EncoderOutput:
        """The :class:`~hiersum.model.encoder_contract.Encoder` contract: src [B, P, T] long; src_mask bool
        [B, P, T], True = real token; paragraph_graph float [B, P, P], required when ``model.graph`` is not
        ``none`` (ignored otherwise); layout: the :class:`PackedGrid` of ``src_mask`` when the caller has it
        (``Batch.layout``, made by ``collate``), otherwise made here. Computes on the real tokens only."""
        check_grid(src, src_mask)
        if layout is None:
            layout = PackedGrid.from_mask(src_mask)
        ids = layout.pack(src)  # (N,)
        return run_packed_layers(self.layers, self.final_norm, self.embed(ids, layout), layout, ids=ids,
                                 paragraph_graph=paragraph_graph, return_attention=return_attention)


def flat_source_limit(length: int, max_positions: int) -> str | None:
    """The one-line error of a flat encoder whose position table has ``max_positions`` entries, given a source
    of ``length`` tokens; None where the table covers it."""
    if length <= max_positions:
        return None
    return (f"the flat encoder reads at most model.max_positions={max_positions} tokens; found a source of "
            f"L={length}: raise model.max_positions (its attention costs L^2), or use the hierarchical encoder")


class FlatEncoder(nn.Module):
    """The flat transformer baseline (the paper's FT, official ``-hier false``): pre-LN self-attention
    layers over one sequence [B, L] (the paragraphs joined with a separator token).

    Input: ``emb(token) * sqrt(D) + pos(token index)`` with one position table of width D. The
    memory is the final LayerNorm output with padding zeroed and the mask of ``src`` (not packed).
    """

    def __init__(self, config: ModelConfig, *, embeddings: nn.Embedding):
        super().__init__()
        self.d_model = config.d_model
        self.embeddings = embeddings
        self.register_buffer(
            "positions", sinusoid_table(config.max_positions, config.d_model), persistent=False
        )
        self.dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(
            SequenceLayer(config.d_model, heads=config.heads, ff_size=config.ff_size, dropout=config.dropout,
                          attention_dropout=config.attention_dropout_rate)
            for _ in range(config.encoder_layers)
        )
        self.final_norm = nn.LayerNorm(config.d_model, eps=LAYER_NORM_EPS)

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor,
        *,
        paragraph_graph: Tensor | None = None,
        return_attention: bool = False,
        layout: PackedGrid | None = None,
    ) -> EncoderOutput:
        """The :class:`~hiersum.model.encoder_contract.Encoder` contract on a flat source: src [B, L] long;
        src_mask bool [B, L], True = real token. ``paragraph_graph`` and ``layout`` are ignored and no attention
        is returned (there are no paragraphs)."""
        if src.shape != src_mask.shape or src.dim() != 2:
            raise ValueError(
                f"the flat encoder needs src and src_mask of shape [B, L]; found {tuple(src.shape)} "
                f"and {tuple(src_mask.shape)}"
            )
        B, L = src.shape
        if (limit := flat_source_limit(L, self.positions.size(0))) is not None:
            raise ValueError(limit)
        x = self.embeddings(src) * math.sqrt(self.d_model) + self.positions[:L]  # (B, L, D)
        x = self.dropout(x)
        for layer in self.layers:
            x = layer(x, src_mask)  # (B, L, D)
        token_states = self.final_norm(x)  # (B, L, D)
        return EncoderOutput(
            token_states=token_states,
            memory=token_states.masked_fill(~src_mask.unsqueeze(-1), 0.0),
            memory_mask=src_mask,
            memory_ids=src,
        )
