"""Fixtures of the model tests; helpers live in ``model_testkit``."""

from __future__ import annotations

import pytest
import torch

from hiersum.model import HierSum
from tests.model.model_testkit import make_batch, make_model


@pytest.fixture
def model() -> HierSum:
    return make_model()


@pytest.fixture
def batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return make_batch()
