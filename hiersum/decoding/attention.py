"""Inspecting the inter-paragraph attention: which source paragraphs the encoder relied on.

Dimensions
    B  batch
    P  paragraphs per example
    H  heads of the inter-paragraph attention (= pooling heads, ``model.inter_heads``)

The weight of a paragraph is the attention it **receives** in the last inter-paragraph layer:
``inter_attention[-1][b, h, i, j]`` (query paragraph i, key paragraph j) averaged over the real
query paragraphs i of the example, per head (:func:`received_attention`, [B, P, H]) and then over
the heads (:func:`top_paragraphs`). Over the real paragraphs of an example the weights sum to 1;
an empty (padding) paragraph receives 0. Needs ``model.encode(..., return_attention=True)`` of a
hierarchical model.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from hiersum.model.encoder import EncoderOutput


def received_attention(encoded: EncoderOutput, real: Tensor) -> Tensor:
    """[B, P, H]: the attention each paragraph receives in the last inter layer, per head, averaged
    over the example's real query paragraphs. real: bool [B, P], True = non-empty paragraph."""
    if not encoded.inter_attention:
        raise ValueError("no inter-paragraph attention: encode with return_attention=True (hierarchical model)")
    attention = encoded.inter_attention[-1].detach().float()  # (B, H, P, P)
    queries = real.to(attention.dtype)[:, None, :, None]  # (B, 1, P, 1)
    received = (attention * queries).sum(2) / queries.sum(2).clamp(min=1.0)  # (B, H, P)
    return received.transpose(1, 2) * real.unsqueeze(-1)  # (B, P, H)


def top_paragraphs(
    encoded: EncoderOutput, provenance: Sequence[Sequence[tuple[int, int]]], k: int
) -> list[list[tuple[int, int, float]]]:
    """Per example, its ``k`` most attended paragraphs as (document index, paragraph index, weight),
    highest weight first. ``provenance[b][p]`` is the (document, paragraph) of paragraph p of example
    b (``EncodedExample.provenance``); its length is the example's paragraph count."""
    if not encoded.inter_attention:
        raise ValueError("no inter-paragraph attention: encode with return_attention=True (hierarchical model)")
    attention = encoded.inter_attention[-1]  # (B, H, P, P)
    B, P = attention.size(0), attention.size(2)
    if len(provenance) != B:
        raise ValueError(f"provenance has {len(provenance)} examples, the encoder output {B}")
    counts = torch.tensor([len(p) for p in provenance], device=attention.device)
    real = torch.arange(P, device=attention.device) < counts.unsqueeze(1)  # (B, P)
    weights = received_attention(encoded, real).mean(-1).cpu()  # (B, P), mean over heads
    ranked = []
    for b, sources in enumerate(provenance):
        order = weights[b, : len(sources)].argsort(descending=True)[:k].tolist()
        ranked.append([(sources[p][0], sources[p][1], float(weights[b, p])) for p in order])
    return ranked
