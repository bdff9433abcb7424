"""Helpers shared by the entry points: the config folder, and the one way every command reports a
usage error (:func:`usage_error`: one line on stderr, exit status :data:`EXIT_USAGE`).

A usage error is a problem with the command itself: an option Hydra or argparse refuses, a bad value
(:class:`hiersum.config.UsageError`, raised by the code below the entry points), a missing or
unreadable file, a malformed record of a split that must be read whole
(:class:`hiersum.data.schema.RecordError`).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.resources
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

from omegaconf.errors import OmegaConfBaseException

from hiersum.config import UsageError, register_configs
from hiersum.data.sample import register_resolver
from hiersum.data.schema import RecordError

# The configs ship in the package as ``hiersum.conf`` (pyproject.toml maps it to the top-level conf/):
# importlib.resources finds the repository's conf/ in an editable install and site-packages/hiersum/conf
# in a wheel. Every @hydra.main takes this folder as config_path (an absolute filesystem path, which
# Hydra reads as is); tests compose with initialize_config_dir(CONFIG_DIR). ``pkg://hiersum.conf``
# would work in both installs too, but a folder also serves the code that lists conf/<group>/*.yaml.
CONFIG_DIR = str(Path(str(importlib.resources.files("hiersum.conf"))))
"""The folder of the Hydra configs (``conf/`` of the checkout, or ``hiersum/conf`` of an installed wheel)."""

register_configs()  # the schemas every conf/ file extends, once for all entry points
register_resolver()  # ${hiersum.sample_dir:...} of conf/data/sample.yaml, resolved in the tasks

EXIT_USAGE = 2
"""Exit status of a usage error: a missing or bad option, a missing or unreadable file."""

__all__ = ["CONFIG_DIR", "EXIT_USAGE", "ArgumentParser", "UsageError", "run_entry_point", "task", "usage_error",
           "usage_errors"]

_FULL_ERROR = "HYDRA_FULL_ERROR"
_saved_full_error: list[str | None] = []
_task_started: list[bool] = []


def usage_error(prog: str, message: object) -> NoReturn:
    """Report a usage error of command ``prog``: ``PROG: error: MESSAGE`` on one line of stderr (the
    lines of a longer message joined), then exit with status :data:`EXIT_USAGE`."""
    text = " ".join(line.strip() for line in str(message).splitlines() if line.strip())
    print(f"{prog}: error: {text}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


@contextlib.contextmanager
def usage_errors(prog: str, *also: type[Exception]) -> Iterator[None]:
    """Report a :class:`UsageError` or :class:`RecordError` (or one of ``also``) raised in the block
    through :func:`usage_error`."""
    try:
        yield
    except (UsageError, RecordError, *also) as error:
        usage_error(prog, error)


@contextlib.contextmanager
def task(prog: str) -> Iterator[None]:
    """The body of every ``@hydra.main`` task: Hydra has composed the config, so its own reporting of
    an unexpected error is back (see :func:`run_entry_point`), and the task's usage errors go through
    :func:`usage_error`."""
    _task_started.append(True)
    _restore_full_error()
    with usage_errors(prog):
        yield


def run_entry_point(hydra_main: Callable[[], None], prog: str) -> None:
    """Run a ``@hydra.main`` function whose task runs in :func:`task`.

    Until the task starts, ``HYDRA_FULL_ERROR=1`` makes Hydra raise what it refuses (an unknown or
    mistyped option, a value of the wrong type, a missing config) instead of printing it over several
    lines and exiting 1: these are usage errors, reported by :func:`usage_error`.
    """
    _saved_full_error.append(os.environ.get(_FULL_ERROR))
    os.environ[_FULL_ERROR] = "1"
    try:
        hydra_main()
    except Exception as error:
        if _task_started:
            raise
        usage_error(prog, _hydra_message(error))
    finally:
        _restore_full_error()


def _restore_full_error() -> None:
    if _saved_full_error:
        saved = _saved_full_error.pop()
        if saved is None:
            os.environ.pop(_FULL_ERROR, None)
        else:
            os.environ[_FULL_ERROR] = saved


def _hydra_message(error: Exception) -> str:
    """Hydra's message (without the config search path it may list), with the first line of the
    OmegaConf error behind it (what was wrong)."""
    message = str(error).split("\nConfig search path:")[0]
    cause = error.__cause__
    if isinstance(cause, OmegaConfBaseException) and str(cause).strip():
        reason = str(cause).strip().splitlines()[0]
        if reason not in message:
            message = f"{message.rstrip()}; {reason}"
    return message


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors (a missing or bad argument) go through :func:`usage_error`."""

    def error(self, message: str) -> NoReturn:
        usage_error(self.prog, message)
