"""Loading the fixtures that the official hiersumm code computed (shared/reference/hiersumm).

Tests that use them skip cleanly when ``../shared`` is absent. They run on the tests' ``device`` and compare
within :func:`tolerance` of it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import torch

from hiersum.checkpoints.official import OFFICIAL_PAD_ID, load_official_hiersumm
from hiersum.model import HierSum
from tests.helpers.paths import SHARED_DIR

REFERENCE = SHARED_DIR / "reference" / "hiersumm"
FIXTURE_NAMES = ("tiny_hier", "tiny_flat")

CPU_ATOL = 1e-5
"""Absolute tolerance against the official outputs on a CPU. Those outputs are fp32 CPU results; ours, on the
same kernels' family, are within 1.5e-6 of them (log-probabilities up to 9.4 in magnitude, token states, memory)."""

CUDA_ATOL = 5e-5
"""Absolute tolerance against the official (CPU) outputs on CUDA, with TF32 off (:func:`full_float32`). Measured on
the CPU: the official fp32 outputs are within 2.7e-6 of an fp64 run of the same model (``.double()``), ours within
2.7e-6 too (both fixtures, measured 2026-11-25). A CUDA fp32 run sums in another order, so its own rounding error is
of the same size; two such results are within about 2 x 2.7e-6, and 5e-5 leaves a margin of about ten for the
kernels' longer reductions while still failing on TF32 products (10-bit mantissa: errors of about 1e-3 on these
values) or a wrong layer."""

CPU = torch.device("cpu")


def tolerance(device: torch.device) -> float:
    """The absolute tolerance of comparisons with the official outputs on ``device``."""
    return CPU_ATOL if device.type == "cpu" else CUDA_ATOL


def fixture_dir(name: str) -> Path:
    return REFERENCE / "fixtures" / name


def load(name: str, file: str):
    """A file of fixture ``name`` (``tiny_hier`` or ``tiny_flat``), or skip the test without it."""
    folder = fixture_dir(name)
    if not folder.is_dir():
        pytest.skip(f"official fixtures not found at {folder}")
    with torch.serialization.safe_globals([argparse.Namespace]):
        return torch.load(folder / file, map_location="cpu", weights_only=True)


def load_model(name: str, device: torch.device = CPU) -> HierSum:
    """The imported official model of fixture ``name``, in eval mode, on ``device``."""
    load(name, "checkpoint.pt")  # skips without fixtures
    return load_official_hiersumm(fixture_dir(name) / "checkpoint.pt").to(device)


def load_inputs(name: str, device: torch.device = CPU) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(src [B,P,T] or [B,L], src_mask, tgt [B,S]) of a fixture (its tgt is stored time-major), on ``device``."""
    data = load(name, "inputs.pt")
    src = data["src"].to(device)
    return src, src.ne(OFFICIAL_PAD_ID), data["tgt"].t().contiguous().to(device)  # tgt: (S, B) -> (B, S)


def load_expected(name: str, device: torch.device) -> dict[str, torch.Tensor]:
    """The official outputs of fixture ``name`` (``expected.pt``: token states, memory, log-probabilities), on
    ``device``."""
    return {key: value.to(device) for key, value in load(name, "expected.pt").items()}


def beam_cases() -> list:
    """(fixture, setting, expected) of every stored beam setting of both fixtures."""
    cases = []
    for name in FIXTURE_NAMES:
        path = fixture_dir(name) / "beam.json"
        if path.is_file():
            cases += [(name, setting, expected) for setting, expected in sorted(json.loads(path.read_text()).items())]
    missing = pytest.mark.skip(reason=f"no official fixtures at {REFERENCE}")
    return cases or [pytest.param("none", "none", {}, marks=missing)]
