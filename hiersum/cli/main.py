"""``hiersum <action> [options]``: the one command, after ``litgpt <action>`` and ``tune <action>``.

The table :data:`hiersum.cli.actions.ACTIONS` lists each action with its function and a one-line description;
``hiersum --help`` prints them. ``hiersum <action> ...`` imports only that action's function and runs it on the
rest of the command line, so ``hiersum --help`` and ``hiersum <action> --help`` answer before torch or
Lightning is imported. The ``hiersum-<action>`` console scripts of pyproject.toml are this same :func:`main`,
which reads the action from the script's name (aliases: same config, same output, messages that start with
``hiersum-<action>``).
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from pathlib import Path
from typing import NoReturn

from hiersum.allocator import keep_freed_memory
from hiersum.cli.actions import ACTIONS

PROG = "hiersum"
EXIT_USAGE = 2
ACTION_VARIABLE = "HIERSUM_ACTION"
"""Set to the running action: a process that the action starts again with its options but without the
action's name (Lightning's DDP ranks run ``sys.argv`` again, which the action sees without it) runs it."""


def index() -> str:
    """The text of ``hiersum --help``."""
    width = max(map(len, ACTIONS))
    *others, last = [name for name, action in ACTIONS.items() if action.config is None]
    flagged = f"{', '.join(others)} and {last}" if others else last
    rows = "\n".join(f"  {name:<{width}}  {action.summary}" for name, action in ACTIONS.items())
    return (
        f"usage: {PROG} <action> [options]\n\n"
        "Hierarchical Transformers for multi-document summarization (Liu & Lapata, ACL 2019).\n\n"
        f"actions:\n{rows}\n\n"
        f"'{PROG} <action> --help' tells what an action reads and writes, its main options and an example.\n"
        "Options are Hydra overrides (key=value, e.g. model=paper trainer.max_epochs=20), except for\n"
        f"{flagged}, which take --flags.\n"
        "Exit status: 0 done, 2 usage error (one line on stderr), 3 some input records refused.\n"
    )


def _usage_error(message: str) -> NoReturn:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


def main(argv: list[str] | None = None) -> None:
    """Run ``hiersum`` with ``argv`` (default: the process's command line; run as a ``hiersum-<action>`` script,
    that action)."""
    alias = script_action(sys.argv[0]) if argv is None else None
    if alias is not None:
        run_action(alias, sys.argv[1:], prog=f"{PROG}-{alias}")
        return
    args = sys.argv[1:] if argv is None else list(argv)
    if not args:
        print(index(), file=sys.stderr, end="")
        _usage_error(f"no action given; expected one of {', '.join(ACTIONS)}")
    if args[0] not in ACTIONS and not args[0].startswith("-") and os.environ.get(ACTION_VARIABLE) in ACTIONS:
        args = [os.environ[ACTION_VARIABLE], *args]  # a DDP rank of a running action
    name, rest = args[0], args[1:]
    if name in ("-h", "--help", "help"):
        print(index(), end="")
        return
    if name in ("-V", "--version"):
        print(f"{PROG} {importlib.metadata.version('hiersum')}")
        return
    if name not in ACTIONS:
        _usage_error(f"unknown action {name!r}; expected one of {', '.join(ACTIONS)} (see '{PROG} --help')")
    run_action(name, rest, prog=f"{PROG} {name}")


def run_action(name: str, argv: list[str], *, prog: str) -> None:
    """Run action ``name`` of :data:`ACTIONS` on ``argv`` as command ``prog`` (its messages start with it), glibc's
    malloc first set to keep freed memory (:func:`hiersum.allocator.keep_freed_memory`): a Hydra action composes its
    config with ``argv`` (:func:`hiersum.cli.common.run_hydra_action`), another parses ``argv`` itself."""
    action = ACTIONS[name]
    keep_freed_memory()  # malloc keeps what tensors free for the next step (hiersum.allocator)
    saved = os.environ.get(ACTION_VARIABLE)
    os.environ[ACTION_VARIABLE] = name  # for the processes the action starts, and for them only
    try:
        if action.config is None:
            action.load()(argv, prog=prog)
        else:
            from hiersum.cli.common import run_hydra_action  # Hydra and the schemas: not for ``hiersum --help``

            run_hydra_action(action, argv, prog=prog)
    finally:
        if saved is None:
            os.environ.pop(ACTION_VARIABLE, None)
        else:
            os.environ[ACTION_VARIABLE] = saved


def script_action(script: str) -> str | None:
    """The action a ``hiersum-<action>`` console script runs, from the script's path (``sys.argv[0]``);
    None for any other program (``hiersum``, ``python -m hiersum``)."""
    name = Path(script).name.removesuffix(".exe")
    action = name.removeprefix(f"{PROG}-")
    return action if action != name and action in ACTIONS else None

if __name__ == "__main__":
    main()
