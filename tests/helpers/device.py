"""The device of the tests that run a model on one: ``HIERSUM_TEST_DEVICE`` (``cpu`` by default; ``make gpu-check``
runs the suite with ``cuda``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest
import torch

TEST_DEVICE = torch.device(os.environ.get("HIERSUM_TEST_DEVICE", "cpu"))


def require_device(device: torch.device = TEST_DEVICE) -> torch.device:
    """``device``, or skip the test when it is a CUDA device this machine does not have."""
    if device.type == "cuda" and not torch.cuda.is_available():
        pytest.skip("HIERSUM_TEST_DEVICE=cuda but torch sees no CUDA device")
    return device


@contextlib.contextmanager
def full_float32() -> Iterator[None]:
    """fp32 matrix products computed in fp32 while the block runs (TF32 off for cuBLAS and cuDNN, matmul precision
    "highest"; PyTorch's defaults, kept whatever a run before set), then the previous settings. No effect on a
    CPU."""
    saved = (torch.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32,
             torch.backends.cudnn.allow_tf32)
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        precision, torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
        torch.set_float32_matmul_precision(precision)


def same_result(device: torch.device) -> dict[str, float]:
    """The ``assert_close`` tolerances of two calls that compute the same thing on ``device``: none on a CPU (bit
    for bit); 1e-5 on CUDA, whose ``index_add`` (the pooling's sums) adds with atomics, in another order each call
    (differences of about 1e-6 seen on an H200)."""
    return dict(rtol=0, atol=0) if device.type == "cpu" else dict(rtol=1e-5, atol=1e-5)
