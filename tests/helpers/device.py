"""The device of the tests that run a model on one: ``HIERSUM_TEST_DEVICE`` (``cpu`` by default; ``make gpu-check``
runs the suite with ``cuda``)."""

from __future__ import annotations

import os

import pytest
import torch

TEST_DEVICE = torch.device(os.environ.get("HIERSUM_TEST_DEVICE", "cpu"))


def require_device(device: torch.device = TEST_DEVICE) -> torch.device:
    """``device``, or skip the test when it is a CUDA device this machine does not have."""
    if device.type == "cuda" and not torch.cuda.is_available():
        pytest.skip("HIERSUM_TEST_DEVICE=cuda but torch sees no CUDA device")
    return device
