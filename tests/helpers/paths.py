"""Where the tests find the checkout, the committed sample corpus and the shared data beside the checkout."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DIR = PROJECT_ROOT / "data" / "sample"
SHARED_DIR = PROJECT_ROOT.parent / "shared"
"""``../shared``: the official fixtures and real corpora; the tests that need it skip without it."""
