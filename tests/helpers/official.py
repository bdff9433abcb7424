"""Loading the fixtures that the official hiersumm code computed (shared/reference/hiersumm).

Tests that use them skip cleanly when ``../shared`` is absent.
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


def fixture_dir(name: str) -> Path:
    return REFERENCE / "fixtures" / name


def load(name: str, file: str):
    """A file of fixture ``name`` (``tiny_hier`` or ``tiny_flat``), or skip the test without it."""
    folder = fixture_dir(name)
    if not folder.is_dir():
        pytest.skip(f"official fixtures not found at {folder}")
    with torch.serialization.safe_globals([argparse.Namespace]):
        return torch.load(folder / file, map_location="cpu", weights_only=True)


def load_model(name: str) -> HierSum:
    load(name, "checkpoint.pt")  # skips without fixtures
    return load_official_hiersumm(fixture_dir(name) / "checkpoint.pt")


def load_inputs(name: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(src [B,P,T] or [B,L], src_mask, tgt [B,S]) of a fixture (its tgt is stored time-major)."""
    data = load(name, "inputs.pt")
    src = data["src"]
    return src, src.ne(OFFICIAL_PAD_ID), data["tgt"].t().contiguous()  # tgt: (S, B) -> (B, S)


def beam_cases() -> list:
    """(fixture, setting, expected) of every stored beam setting of both fixtures."""
    cases = []
    for name in FIXTURE_NAMES:
        path = fixture_dir(name) / "beam.json"
        if path.is_file():
            cases += [(name, setting, expected) for setting, expected in sorted(json.loads(path.read_text()).items())]
    missing = pytest.mark.skip(reason=f"no official fixtures at {REFERENCE}")
    return cases or [pytest.param("none", "none", {}, marks=missing)]
