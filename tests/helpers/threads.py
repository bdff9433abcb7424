"""One intra-op thread for the tests' tensors: the tiny model is fastest so, and two pytest-xdist workers (and
the processes they start) do not spin OpenMP threads against each other on the cores. The autouse
``single_thread`` fixture of tests/conftest.py sets it for each test; fixtures of a wider scope start before it,
so they set it themselves with :func:`one_thread`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """``torch.set_num_threads(1)`` while the block runs, then the count it had."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
