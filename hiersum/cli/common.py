"""Helpers shared by the Hydra entry points."""

from __future__ import annotations

from pathlib import Path

CONFIG_DIR = str(Path(__file__).resolve().parents[2] / "conf")
"""The project's ``conf/`` folder (the package is installed in editable mode from the repository)."""
