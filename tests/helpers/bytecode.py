"""Whether the installed packages that every process of the tests imports have their bytecode.

pip writes each module's bytecode (``__pycache__/<module>.cpython-3X.pyc``) when it installs a package. This
machine image sets ``PYTHONDONTWRITEBYTECODE=1``: Python reads that bytecode but never writes any. Where it is
gone (a ``find . -name __pycache__`` clean-up run over a checkout reaches ``.venv``), every process the tests start
compiles torch and Lightning from source first (``import hiersum.cli.main, hiersum.commands.train``: 10.5 CPU s
against 5.4 s), and ``make test`` took 386 and 416 s without it against 269 and 260 s with it (2026-11-28,
alternated; docs/development.md, "The suite's time").
``tests/conftest.py`` says so in pytest's header, with the command that writes it again."""

from __future__ import annotations

import importlib.util
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path

CHECKED = ("torch", "pytorch_lightning")
"""The largest packages every training process imports."""


def without_bytecode(packages: Iterable[str]) -> list[str]:
    """The installed ``packages`` whose ``__init__`` module has no bytecode beside it (those not installed are
    left out; nothing is imported)."""
    missing = []
    for name in packages:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        if not Path(importlib.util.cache_from_source(spec.origin)).is_file():
            missing.append(name)
    return missing


def bytecode_header(packages: Iterable[str] = CHECKED) -> str | None:
    """pytest's header line where Python writes no bytecode and ``packages`` have none; None otherwise."""
    if not sys.dont_write_bytecode:
        return None  # the first process to import a package writes its bytecode
    missing = without_bytecode(packages)
    if not missing:
        return None
    site_packages = sysconfig.get_paths()["purelib"]
    return (f"bytecode: none for {', '.join(missing)} and PYTHONDONTWRITEBYTECODE is set: every process the tests "
            f"start compiles them from source (make test ~1.5x slower); write it as pip does at install: "
            f"{sys.executable} -m compileall -q -j 0 {site_packages}")
