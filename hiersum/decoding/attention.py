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
from pathlib import Path

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


def plot_attention_heatmap(
    weights: Tensor, path: str | Path, *, labels: Sequence[str] | None = None, title: str | None = None
) -> Path:
    """Write a PNG heatmap of ``weights`` [P, H] (paragraphs x heads, e.g. ``received_attention(...)[b]``).

    ``labels``: one name per paragraph (e.g. "doc 2 / par 0"). Uses matplotlib's Agg canvas (no display).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if weights.dim() != 2:
        raise ValueError(f"weights must be [P, heads], found shape {tuple(weights.shape)}")
    P, H = weights.shape
    figure = Figure(figsize=(1.5 + 0.5 * H, 1.0 + 0.3 * P))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    image = axes.imshow(weights.detach().float().cpu().numpy(), aspect="auto", cmap="viridis")
    figure.colorbar(image, ax=axes, label="attention received")
    axes.set_xlabel("head")
    axes.set_ylabel("paragraph")
    axes.set_xticks(range(H))
    axes.set_yticks(range(P), labels=list(labels) if labels is not None else [str(p) for p in range(P)])
    if title:
        axes.set_title(title)
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    return path
