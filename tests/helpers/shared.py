"""Runs made once for the whole test session: under pytest-xdist the workers share one folder above their own,
and the first worker to need a run makes it there under a file lock while the others wait, then read it: the
tiny trained run (:mod:`tests.helpers.trained`), the CPU roofs, the precision matrix's runs, the uninterrupted
DDP run. The tests only read what is made."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

from tests.helpers.threads import one_thread

MADE = ".made"
"""The file written once a folder's run is complete: a run that failed half-way is made again."""


def made_once(tmp_path_factory: pytest.TempPathFactory, worker_id: str, name: str,
              make: Callable[[Path], None]) -> Path:
    """The session's folder ``name``, filled by ``make(folder)`` (at one intra-op thread, as the tests run) the
    first time it is asked for."""
    if worker_id == "master":  # no xdist: this process alone
        folder = tmp_path_factory.getbasetemp() / name
    else:
        folder = tmp_path_factory.getbasetemp().parent / name
    with FileLock(f"{folder}.lock"):
        if not (folder / MADE).is_file():
            folder.mkdir(parents=True, exist_ok=True)
            with one_thread():  # a fixture of a wider scope starts before the autouse single_thread
                make(folder)
            (folder / MADE).touch()
    return folder
