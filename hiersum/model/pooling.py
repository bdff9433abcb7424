"""Multi-head pooling: one attention-weighted summary vector per head of each paragraph.

Dimensions
    N  packed token rows (the real tokens of a batch, paragraph after paragraph)
    R  real paragraphs (segments of packed rows)
    B  batch
    P  paragraphs per example
    T  tokens per paragraph
    D  model width
    H  pooling heads
    E  head width, D / H

Masks are boolean with True = real token. The pooling over a padded [N, T, D] grid of paragraphs, the reference the
packed one is tested against, lives in ``tests/helpers/padded.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn


class MultiHeadPooling(nn.Module):
    """Per head h: a_h = softmax_t(w_h . x_t + b_h) over real tokens; pooled_h = sum_t a_h,t v_h,t.

    ``score`` maps D -> H (one score per head), ``value`` maps D -> D (split into H heads of
    width E). There is no output projection (the official inter layer uses none).
    """

    def __init__(self, d_model: int, *, heads: int, dropout: float):
        super().__init__()
        if d_model % heads:
            raise ValueError(f"d_model={d_model} must be divisible by heads={heads}")
        self.heads = heads
        self.score = nn.Linear(d_model, heads)
        self.value = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, segment: Tensor, n_segments: int) -> PooledSegments:
        """Pool packed rows: x [N, D]; segment long [N], the paragraph (0..R-1) of each row, R = ``n_segments``.
        Every paragraph has at least one row."""
        N, D = x.shape
        H = self.heads
        scores = self.score(x)  # (N, H)
        index = segment.unsqueeze(1).expand(N, H)  # (N, H)
        # softmax within each segment; the shift by the segment's max changes no value or gradient
        top = scores.new_full((n_segments, H), float("-inf")).scatter_reduce(
            0, index, scores.detach(), "amax", include_self=False
        )  # (R, H)
        exp = (scores - top.index_select(0, segment)).exp()  # (N, H)
        total = exp.new_zeros(n_segments, H).index_add(0, segment, exp)  # (R, H)
        weights = exp / total.index_select(0, segment)  # (N, H)
        values = self.value(x).view(N, H, D // H)  # (N, H, E)
        # the sum takes the dtype of its terms: under CUDA autocast exp gives fp32 weights, linear bf16 values
        weighted = self.dropout(weights).unsqueeze(-1) * values  # (N, H, E)
        vectors = weighted.new_zeros(n_segments, H, D // H).index_add(0, segment, weighted)  # (R, H, E)
        return PooledSegments(vectors=vectors, weights=weights)


@dataclass
class PooledSegments:
    """Result of :class:`MultiHeadPooling`."""

    vectors: Tensor
    """[R, H, E] weighted sums of the value heads of each paragraph."""
    weights: Tensor
    """[N, H] pooling weight of each row (before dropout): sum to one over each paragraph's rows."""


def pooling_penalty(pooling_weights: list[Tensor], src_mask: Tensor) -> Tensor:
    """Diversity penalty of the pooling heads (Lin et al., 2017): ||A A^T - I||_F^2.

    For each inter layer and each real (non-empty) paragraph, A = [H, T] are its pooling weights.
    The penalty is averaged over the real paragraphs of the batch and over the inter layers; it is
    zero (a scalar tensor) without inter layers or real paragraphs.

    pooling_weights: per inter layer [B, P, H, T]; src_mask: bool [B, P, T], True = real token.
    """
    real = src_mask.any(-1)  # (B, P)
    if not pooling_weights or not real.any():
        return src_mask.new_zeros((), dtype=torch.float)
    penalties = []
    for weights in pooling_weights:
        H = weights.size(2)
        gram = weights @ weights.transpose(-1, -2)  # (B, P, H, H)
        identity = torch.eye(H, dtype=gram.dtype, device=gram.device)
        penalties.append((gram - identity).pow(2).sum((-1, -2))[real].mean())  # mean over real paragraphs
    return torch.stack(penalties).mean()
