"""The padded-grid reference of the packed encoders: every layer over the whole [B, P, T] grid, with the package's
own modules and parameters, as hiersum computed before it packed the real tokens. The package computes on packed
rows only; this reference moved here (issue 33) as the official one lives in tests/helpers. The equivalence tests
compare the packed encoders with it (tests/model/test_packed_encoder.py, test_pretrained_encoder.py), and
``scripts/bench_train.py`` times a step against it.

Dimensions
    B  batch
    P  paragraphs per example
    T  tokens per paragraph
    N  paragraphs of a batch (B x P flattened) in :func:`pool`
    D  model width
    H  heads (local attention heads, or pooling heads in an inter layer)
    E  head width, D / H
    M  packed memory length: the most real tokens of any example in the batch

Masks are boolean with True = real token.
"""

from __future__ import annotations

import functools
import math

import torch
from torch import Tensor, nn

from hiersum.model import HierSum
from hiersum.model.encoder import HierarchicalEncoder, InterLayer, InterLayerOutput, LocalLayer, check_grid
from hiersum.model.encoder_contract import EncoderOutput
from hiersum.model.pooling import MultiHeadPooling
from hiersum.model.pretrained import PretrainedEncoder


def local_layer(layer: LocalLayer, x: Tensor, mask: Tensor) -> Tensor:
    """``layer`` over the grid: x [B, P, T, D], mask bool [B, P, T] -> [B, P, T, D]."""
    B, P, T, D = x.shape
    x = x.reshape(B * P, T, D)  # (B*P, T, D)
    h = layer.norm(x)
    context = layer.self_attn(h, h, mask=mask.reshape(B * P, 1, T))  # (B*P, T, D)
    return layer.add_context(x, context).view(B, P, T, D)


def pool(pooling: MultiHeadPooling, x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """``pooling`` over padded paragraphs: x [N, T, D], mask bool [N, T] -> (vectors [N, H, E], zero for an empty
    paragraph; weights [N, H, T], zero at padding)."""
    N, T, D = x.shape
    H = pooling.heads
    keep = mask.unsqueeze(1)  # (N, 1, T)
    scores = pooling.score(x).transpose(1, 2)  # (N, H, T)
    # A finite fill keeps the softmax (and its gradient) finite for an empty paragraph.
    scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
    weights = scores.softmax(-1) * keep  # (N, H, T)
    values = pooling.value(x).view(N, T, H, D // H).transpose(1, 2)  # (N, H, T, E)
    vectors = (pooling.dropout(weights).unsqueeze(-1) * values).sum(-2)  # (N, H, E)
    return vectors, weights


def inter_layer(
    layer: InterLayer, x: Tensor, mask: Tensor, *, graph: Tensor | None, return_attention: bool
) -> InterLayerOutput:
    """``layer`` over the grid: x [B, P, T, D], mask bool [B, P, T]; states [B, P, T, D]."""
    B, P, T, D = x.shape
    vectors, weights = pool(layer.pooling, layer.norm(x).view(B * P, T, D), mask.view(B * P, T))  # (B*P, H, E)
    vectors = vectors.view(B, P, layer.heads, D // layer.heads)  # (B, P, H, E)
    update, attention = layer.attend_paragraphs(vectors, mask.any(-1), graph, return_attention)  # (B, P, D)
    return InterLayerOutput(
        states=layer.feed_forward(x + update.unsqueeze(2)),  # update (B, P, 1, D) added to every token
        pooling_weights=weights.view(B, P, layer.heads, T),
        attention=attention,
    )


def pack_real_tokens(token_states: Tensor, src_mask: Tensor) -> tuple[Tensor, Tensor]:
    """The real tokens of each example packed paragraph after paragraph, right-padded with zeros: token_states
    [B, P, T, D], src_mask bool [B, P, T] -> (memory [B, M, D], memory_mask bool [B, M]), M at least 1."""
    B, P, T, D = token_states.shape
    lengths = src_mask.reshape(B, P * T).sum(-1)  # (B,)
    M = max(int(lengths.max()), 1) if B else 1
    memory_mask = torch.arange(M, device=src_mask.device) < lengths.unsqueeze(1)  # (B, M)
    memory = token_states.new_zeros(B, M, D).masked_scatter(
        memory_mask.unsqueeze(-1),
        token_states[src_mask],  # (B, M, 1) <- (n_real, D)
    )
    return memory, memory_mask


def run_layers(
    layers: nn.ModuleList, final_norm: nn.Module, x: Tensor, src_mask: Tensor, *,
    paragraph_graph: Tensor | None, return_attention: bool,
) -> EncoderOutput:
    """``layers`` then ``final_norm`` over the grid ``x`` [B, P, T, D] (``src_mask`` [B, P, T]); the memory is the
    real tokens packed (:func:`pack_real_tokens`)."""
    pooling_weights, inter_attention = [], []
    for layer in layers:
        if isinstance(layer, InterLayer):
            out = inter_layer(layer, x, src_mask, graph=paragraph_graph, return_attention=return_attention)
            x = out.states
            pooling_weights.append(out.pooling_weights)
            inter_attention.append(out.attention)
        else:
            x = local_layer(layer, x, src_mask)
    token_states = final_norm(x)  # (B, P, T, D)
    memory, memory_mask = pack_real_tokens(token_states, src_mask)  # (B, M, D), (B, M)
    return EncoderOutput(
        token_states=token_states, memory=memory, memory_mask=memory_mask,
        pooling_weights=pooling_weights if return_attention else None,
        inter_attention=inter_attention if return_attention else None,
    )


def hierarchical_forward(
    encoder: HierarchicalEncoder, src: Tensor, src_mask: Tensor, *, paragraph_graph: Tensor | None = None,
    return_attention: bool = False, layout: object = None,
) -> EncoderOutput:
    """:meth:`HierarchicalEncoder.forward` over the whole grid (``layout`` ignored)."""
    check_grid(src, src_mask)
    B, P, T = src.shape
    assert max(P, T) <= encoder.positions.size(0), "the padded reference reads the table's rows only"
    half = encoder.d_model // 2
    # (B, P, T, D/2) each: index of the token in its paragraph, of the paragraph in the example
    token_pos = encoder.positions[:T].view(1, 1, T, half).expand(B, P, T, half)
    paragraph_pos = encoder.positions[:P].view(1, P, 1, half).expand(B, P, T, half)
    positions = torch.cat([token_pos, paragraph_pos], -1)  # (B, P, T, D)
    x = encoder.dropout(encoder.embeddings(src) * math.sqrt(encoder.d_model) + positions)
    return run_layers(encoder.layers, encoder.final_norm, x, src_mask, paragraph_graph=paragraph_graph,
                      return_attention=return_attention)


def pretrained_forward(
    encoder: PretrainedEncoder, src: Tensor, src_mask: Tensor, *, paragraph_graph: Tensor | None = None,
    return_attention: bool = False, layout: object = None,
) -> EncoderOutput:
    """:meth:`PretrainedEncoder.forward` with its new layers over the whole grid (``layout`` ignored)."""
    src, src_mask = encoder.encoder_input(src, src_mask)
    states = encoder.encode_paragraphs(src, src_mask)  # (B, P, T, D)
    P = src.size(1)
    x = states + encoder.positions[:P].view(1, P, 1, -1)  # (B, P, T, D)
    return run_layers(encoder.layers, encoder.final_norm, x, src_mask, paragraph_graph=paragraph_graph,
                      return_attention=return_attention)


def use_padded_grid(model: HierSum) -> HierSum:
    """``model``, its encoder (hierarchical or pretrained) switched in place to the padded-grid reference: its
    ``forward`` becomes :func:`hierarchical_forward` or :func:`pretrained_forward` (same parameters, same
    ``state_dict`` keys). Copy the model first to keep the packed one."""
    encoder = model.encoder
    forward = {HierarchicalEncoder: hierarchical_forward, PretrainedEncoder: pretrained_forward}[type(encoder)]
    encoder.forward = functools.partial(forward, encoder)  # an instance attribute: nn.Module.__call__ calls it
    return model
