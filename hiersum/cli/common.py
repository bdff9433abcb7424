"""Helpers shared by the entry points: the config folder, and the one way every command reports a
usage error (:func:`usage_error`: one line on stderr, exit status :data:`EXIT_USAGE`).

A usage error is a problem with the command itself: an option Hydra or argparse refuses, a bad value
(:class:`hiersum.errors.UsageError`, raised by the code below the entry points), a missing or
unreadable file, a malformed record of a split that must be read whole
(:class:`hiersum.data.schema.RecordError`).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib.resources
import os
import re
import shutil
import string
import sys
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from omegaconf import DictConfig
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

from hiersum.cli.actions import Action
from hiersum.cli.config_store import register_configs
from hiersum.cli.resolvers import register_resolvers
from hiersum.errors import RunStopped, UsageError, interruption_status
from hiersum.private_apis import config_option_names

# The configs ship in the package as ``hiersum.conf`` (pyproject.toml maps it to the top-level conf/):
# importlib.resources finds the repository's conf/ in an editable install and site-packages/hiersum/conf
# in a wheel. Every @hydra.main takes this folder as config_path (an absolute filesystem path, which
# Hydra reads as is); tests compose with initialize_config_dir(CONFIG_DIR). ``pkg://hiersum.conf``
# would work in both installs too, but a folder also serves the code that lists conf/<group>/*.yaml.
CONFIG_DIR = str(Path(str(importlib.resources.files("hiersum.conf"))))
"""The folder of the Hydra configs (``conf/`` of the checkout, or ``hiersum/conf`` of an installed wheel)."""

register_configs()  # the schemas every conf/ file extends, once for all entry points
register_resolvers()  # ${hiersum.sample_dir:...} and ${hiersum.run_name:...} of conf/, resolved in the tasks

EXIT_USAGE = 2
"""Exit status of a usage error: a missing or bad option, a missing or unreadable file."""

EXIT_RECORD_ERRORS = 3
"""Exit status of ``summarize`` and ``rank`` when some input records were refused (the others are written)."""

__all__ = ["CONFIG_DIR", "EXIT_RECORD_ERRORS", "EXIT_USAGE", "ArgumentParser", "run_entry_point", "run_hydra_action",
           "task", "usage_error", "usage_errors"]

_FULL_ERROR = "HYDRA_FULL_ERROR"


@dataclass
class Invocation:
    """One run of an entry point (:func:`run_entry_point`), until it returns: the name it was invoked as
    (``hiersum summarize`` or ``hiersum-summarize``), ``HYDRA_FULL_ERROR`` as the caller had it, and whether
    Hydra has started the task (after which an error is the task's, no longer a refused command line)."""

    prog: str
    caller_full_error: str | None
    task_started: bool = False
    started_at: float = field(default_factory=time.time)
    """When the entry point was called (``time.time()``): a run directory Hydra made since holds nothing older."""
    run_dir_existed: bool = False
    """The command line names a ``hydra.run.dir`` that existed before the call (never removed on a refusal)."""

    def restore_full_error(self) -> None:
        """``HYDRA_FULL_ERROR`` back to what the caller had (the entry point sets it while Hydra composes)."""
        if self.caller_full_error is None:
            os.environ.pop(_FULL_ERROR, None)
        else:
            os.environ[_FULL_ERROR] = self.caller_full_error


_invocation: ContextVar[Invocation | None] = ContextVar("hiersum_invocation", default=None)
"""The entry point running in this context (an entry point run inside another's task gets its own)."""


def usage_error(prog: str, message: object) -> NoReturn:
    """Report a usage error of command ``prog``: ``PROG: error: MESSAGE`` on one line of stderr (the
    lines of a longer message joined), then exit with status :data:`EXIT_USAGE`."""
    text = " ".join(line.strip() for line in str(message).splitlines() if line.strip())
    print(f"{prog}: error: {text}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


@contextlib.contextmanager
def usage_errors(prog: str, *also: type[Exception]) -> Iterator[None]:
    """Report a :class:`UsageError` or :class:`~hiersum.data.schema.RecordError` (or one of ``also``) raised
    in the block through :func:`usage_error`; with ``HYDRA_FULL_ERROR=1`` in the environment, re-raise it
    instead (its full traceback, with the exceptions it was raised from)."""
    from hiersum.data.schema import RecordError  # the data pipeline: here, not when a --help is answered

    try:
        yield
    except (UsageError, RecordError, *also) as error:
        if os.environ.get(_FULL_ERROR) == "1":
            _show_context(error)
            raise
        usage_error(prog, error)


def _remove_untouched_run_dir(since: float) -> None:
    """Remove the run directory of a task refused as a usage error when it holds only what Hydra wrote there
    since ``since`` (``.hydra/`` and the job's log); a directory with anything else, or a file older (a run
    resumed into), stays."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    hydra_files = run_dir / str(HydraConfig.get().output_subdir)
    entries = list(run_dir.iterdir()) if run_dir.is_dir() else []
    untouched = all(entry == hydra_files or (entry.is_file() and entry.suffix == ".log") for entry in entries)
    made_now = all(path.stat().st_mtime >= since - 1 for path in run_dir.rglob("*") if path.is_file())
    if entries and untouched and made_now:
        shutil.rmtree(run_dir, ignore_errors=True)


def _show_context(error: BaseException) -> None:
    """Let the traceback of ``error`` show the exceptions hidden by a ``raise ... from None`` behind it."""
    behind: BaseException | None = error
    while behind is not None:
        behind.__suppress_context__ = False
        behind = behind.__cause__ or behind.__context__


@contextlib.contextmanager
def task(prog: str) -> Iterator[None]:
    """The body of every ``@hydra.main`` task: Hydra has composed the config, so its own reporting of
    an unexpected error is back (see :func:`run_entry_point`), and the task's usage errors go through
    :func:`usage_error`. A :class:`RunStopped` prints its one line and exits with its status; Ctrl-C
    (and SIGTERM where a command raises it) anywhere else ends in one line too (exit 130 / 143)."""
    invocation = _invocation.get()
    if invocation is not None:
        invocation.task_started = True
        invocation.restore_full_error()
    name = invocation.prog if invocation is not None else prog
    try:
        with usage_errors(name):
            yield
    except SystemExit as exiting:  # a refused command: the run directory Hydra made for it goes too
        if exiting.code == EXIT_USAGE and invocation is not None and not invocation.run_dir_existed:
            _remove_untouched_run_dir(invocation.started_at)
        raise
    except RunStopped as stopped:  # what it saved and how to go on, in one line
        print(f"{name}: {stopped}", file=sys.stderr)
        sys.exit(stopped.exit_status)
    except KeyboardInterrupt as error:
        print(f"{name}: interrupted before the end; rerun the command to run it again", file=sys.stderr)
        sys.exit(interruption_status(error))


HELP_FLAGS = ("--help", "-h")


def run_entry_point(hydra_main: Callable[[], None], prog: str, argv: list[str] | None = None, *,
                    config_name: str | None = None) -> None:
    """Run a ``@hydra.main`` function whose task runs in :func:`task`, as command ``prog`` (the name its
    messages start with) on the command line ``argv`` (default: the process's). With ``config_name`` (the
    function's primary config), ``--help`` is answered by :func:`print_help`.

    Until the task starts, ``HYDRA_FULL_ERROR=1`` makes Hydra raise what it refuses (an unknown or
    mistyped option, a value of the wrong type, a missing config) instead of printing it over several
    lines and exiting 1: these are usage errors, reported by :func:`usage_error`.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    if config_name is not None and any(flag in args for flag in HELP_FLAGS):
        try:
            print(print_help(config_name, [arg for arg in args if arg not in HELP_FLAGS]), end="")
        except Exception as error:  # an override Hydra refuses: reported as without --help
            usage_error(prog, _hydra_message(error))
        return
    named = [arg.split("=", 1)[1] for arg in args if arg.startswith("hydra.run.dir=")]
    invocation = Invocation(prog, os.environ.get(_FULL_ERROR), run_dir_existed=any(Path(d).exists() for d in named))
    token = _invocation.set(invocation)
    os.environ[_FULL_ERROR] = "1"
    saved_argv = sys.argv
    sys.argv = [sys.argv[0], *args]  # argv[0] kept: Lightning's DDP ranks re-run it with sys.argv[1:]
    try:
        hydra_main()
    except Exception as error:
        if invocation.task_started:
            raise
        usage_error(prog, _hydra_message(error))
    finally:
        _invocation.reset(token)
        sys.argv = saved_argv
        invocation.restore_full_error()


def run_hydra_action(action: Action, argv: list[str] | None, *, prog: str) -> None:
    """Run the Hydra action ``action`` as command ``prog`` on ``argv``: Hydra composes its primary config
    (``conf/<action.config>.yaml``) with the command line, then its function runs on it inside :func:`task`
    (imported only then, so that ``--help`` answers at once)."""
    import hydra

    @hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name=action.config)
    def run(cfg: DictConfig) -> None:
        with task(prog):
            action.load()(cfg)

    run_entry_point(run, prog, argv, config_name=action.config)


def print_help(config_name: str, overrides: list[str]) -> str:
    """The ``--help`` page of an action: the template of its ``hydra/help`` config
    (``conf/hydra/help/<action>.yaml``, Hydra's own help mechanism) with ``$CONFIG`` the config composed
    with ``overrides`` (less the ``paths`` every action shares) and ``$APP_CONFIG_GROUPS`` the config groups
    the action takes, with their options.

    Hydra's own ``--help`` lists every config group of the search path twice, whether or not the template
    shows them (2.7 s of a 3.3 s profile of ``hiersum summarize --help``); composing once takes 0.3 s.
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name, overrides=overrides, return_hydra_config=True)
    GlobalHydra.instance().clear()
    template = string.Template(str(cfg.hydra.help.template))
    config = OmegaConf.masked_copy(cfg, [key for key in cfg if key not in ("hydra", "paths")])
    return template.safe_substitute(CONFIG=OmegaConf.to_yaml(config), APP_CONFIG_GROUPS=_config_groups(cfg))


def _config_groups(cfg: Any) -> str:
    """``group: option, option`` for each config group of the composed ``cfg`` (its defaults list)."""
    groups = [group for group in cfg.hydra.runtime.choices if not group.startswith("hydra")]
    lines = []
    for group in sorted(groups):
        options = sorted(path.stem for path in Path(CONFIG_DIR, group).glob("*.yaml"))
        lines.append(f"{group}: {', '.join(options)}")
    return "\n".join(lines)


def _hydra_message(error: Exception) -> str:
    """Hydra's message (without the config search path it may list), with the first line of the
    OmegaConf error behind it (what was wrong). Before the task, an ``OSError`` is Hydra creating the run
    directory."""
    if isinstance(error, OSError) and error.filename is not None:  # (a missing config is an OSError too)
        return (f"cannot create the run directory {error.filename} ({error.strerror}): choose another "
                "hydra.run.dir (nothing was written)")
    message = str(error).split("\nConfig search path:")[0]
    cause = error.__cause__
    if isinstance(cause, OmegaConfBaseException) and str(cause).strip():
        reason = str(cause).strip().splitlines()[0]
        if reason not in message:
            message = f"{message.rstrip()}; {reason}"
    if isinstance(cause, ConfigAttributeError | ConfigKeyError):
        meant = nearest_options(cause)
        if meant:  # Hydra's advice to add the key with "+" would only hide the typo: the schema has no such option
            message = re.sub(r"\s*To append to your config use \+\S+", "", message.rstrip())
            message = f"{message}; did you mean {' or '.join(meant)}?"
    return message


def nearest_options(unknown: ConfigAttributeError | ConfigKeyError) -> list[str]:
    """The options of the config an unknown key was set in that it probably meant (at most three): those whose
    name holds the key as a word (``workers``: ``data.prepare_workers``), else the closest in spelling
    (``data.batch_token``: ``data.batch_tokens``)."""
    parent = unknown.parent_node
    if not isinstance(parent, DictConfig) or not unknown.full_key:
        return []
    options = [key for key in config_option_names(parent) if not key.startswith("hydra.")]
    typed = str(unknown.full_key)
    name = typed.rsplit(".", 1)[-1]
    as_a_word = [key for key in options if name in key.rsplit(".", 1)[-1].split("_")]
    return as_a_word[:3] or difflib.get_close_matches(typed, options, n=3, cutoff=0.8)


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors (a missing or bad argument) go through :func:`usage_error`."""

    def error(self, message: str) -> NoReturn:
        usage_error(self.prog, message)
