"""The run's exceptions and exit statuses: what the entry points turn into one line and an exit status.
This module imports nothing."""

from __future__ import annotations


class UsageError(ValueError):
    """A problem with the command itself (a bad option or value, a missing or unreadable file): the
    entry points report it in one line on stderr and exit with status 2 (``hiersum.cli.common``)."""


class RunStopped(Exception):
    """A run that stopped before its end (Ctrl-C, SIGTERM, a failed write) and says in one line what it saved
    and how to go on: the entry points print the message and exit with ``exit_status``."""

    def __init__(self, message: str, *, exit_status: int) -> None:
        super().__init__(message)
        self.exit_status = exit_status


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the commands install its handler, handled like Ctrl-C."""


EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT)."""
EXIT_TERMINATED = 143
"""Exit status after SIGTERM (128 + SIGTERM)."""


def interruption_status(error: KeyboardInterrupt) -> int:
    """:data:`EXIT_TERMINATED` for :class:`Terminated`, :data:`EXIT_INTERRUPTED` for Ctrl-C."""
    return EXIT_TERMINATED if isinstance(error, Terminated) else EXIT_INTERRUPTED


class TrainingDiverged(RuntimeError):
    """Training stopped because its updates kept being non-finite (the divergence guard of
    :class:`hiersum.training.module.HierSumModule`): ``hiersum train`` reports it in one line (from
    rank 0; every rank raises it) and exits with status 1."""

    def __init__(self, message: str, *, rank: int = 0) -> None:
        super().__init__(message)
        self.rank = rank
