"""The pooling diversity penalty (hiersum.model.pooling.pooling_penalty)."""

from __future__ import annotations

import pytest
import torch

from hiersum.model.pooling import pooling_penalty
from tests.helpers.model import make_model


def test_pooling_penalty_values():
    mask = torch.tensor([[[True, True, True], [False, False, False]]])  # (1, 2, 3): one real, one empty paragraph
    distinct = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # two heads on different tokens
    weights = torch.zeros(1, 2, 2, 3)  # (B, P, H, T)
    weights[0, 0] = distinct
    weights[0, 1] = 1 / 3  # garbage in the empty paragraph must not count
    assert pooling_penalty([weights], mask).item() == pytest.approx(0.0)
    same = torch.zeros(1, 2, 2, 3)
    same[0, 0] = torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])  # both heads on one token: A A^T = ones
    assert pooling_penalty([same], mask).item() == pytest.approx(2.0)
    assert pooling_penalty([weights, same], mask).item() == pytest.approx(1.0)  # mean over layers
    assert pooling_penalty([], mask).item() == 0.0


def test_pooling_penalty_of_a_model_is_positive_and_differentiable(batch, device):
    src, mask, _ = batch
    model = make_model(device=device).train()
    encoded = model.encode(src, mask, return_attention=True)
    penalty = pooling_penalty(encoded.pooling_weights, mask)
    assert penalty.item() > 0
    penalty.backward()
    assert model.encoder.layers[1].pooling.score.weight.grad.abs().sum() > 0


