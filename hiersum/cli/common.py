"""Helpers shared by the Hydra entry points: the config folder, usage errors and their exit status."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

CONFIG_DIR = str(Path(__file__).resolve().parents[2] / "conf")
"""The project's ``conf/`` folder (the package is installed in editable mode from the repository)."""

EXIT_USAGE = 2
"""Exit status of a usage error: a missing or bad option, a missing or unreadable file."""


class UsageError(ValueError):
    """A problem with the command itself; reported in one line, exit status 2."""


_task_started: list[bool] = []


def task_started() -> None:
    """Called first by every ``@hydra.main`` task: Hydra has composed the config."""
    _task_started.append(True)


def run_entry_point(hydra_main: Callable[[], None]) -> None:
    """Run a ``@hydra.main`` function whose task calls :func:`task_started`.

    Hydra reports its own errors (an unknown or mistyped option, a wrong type for a typed field)
    without a traceback and exits 1 before the task starts; those are usage errors, so they exit 2.
    """
    try:
        hydra_main()
    except SystemExit as exit_:
        if exit_.code == 1 and not _task_started:
            sys.exit(EXIT_USAGE)
        raise
