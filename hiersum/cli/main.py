"""``hiersum <action> [options]``: the one command, after ``litgpt <action>`` and ``tune <action>``.

:data:`ACTIONS` lists each action with the module of its entry point and a one-line description; ``hiersum
--help`` prints them. ``hiersum <action> ...`` imports only that action's entry module and runs it with the
rest of the command line, so ``hiersum --help`` and ``hiersum <action> --help`` answer before torch or
Lightning is imported. The ``hiersum-<action>`` console scripts of pyproject.toml call the same entry points
(aliases: same config, same output).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
from dataclasses import dataclass
from typing import NoReturn

PROG = "hiersum"
EXIT_USAGE = 2
ACTION_VARIABLE = "HIERSUM_ACTION"
"""Set to the running action: a process that the action starts again with its options but without the
action's name (Lightning's DDP ranks run ``sys.argv`` again, which the action sees without it) runs it."""


@dataclass(frozen=True)
class Action:
    module: str
    """The entry module; its ``main(argv)`` runs the action."""
    summary: str
    """One line for ``hiersum --help``."""


ACTIONS: dict[str, Action] = {
    "train": Action("hiersum.cli.train", "fit a model on a corpus, then score its best checkpoint on the test split"),
    "evaluate": Action("hiersum.cli.evaluate",
                       "score a checkpoint (decoding a split) or a predictions file; write the report"),
    "summarize": Action("hiersum.cli.summarize",
                        "summarize JSONL records, text files or stdin with a checkpoint, resumably"),
    "prepare": Action("hiersum.cli.prepare", "tokenize a corpus's splits once into prepared shards"),
    "rank": Action("hiersum.cli.rank", "keep the top paragraphs of raw documents (trained ranker or tf-idf)"),
    "train-ranker": Action("hiersum.cli.train_ranker", "train the paragraph ranker of Liu & Lapata (2019)"),
    "evaluate-selection": Action("hiersum.cli.evaluate_selection",
                                 "how much of the references each paragraph selection keeps"),
    "average-checkpoints": Action("hiersum.cli.average_checkpoints", "average the weights of several checkpoints"),
    "export": Action("hiersum.cli.export", "write a checkpoint as a model directory (safetensors, config.json, "
                                           "tokenizer, model card)"),
    "import-hiersumm": Action("hiersum.cli.import_hiersumm", "convert an official hiersumm checkpoint"),
    "make-sample": Action("hiersum.cli.make_sample", "regenerate the synthetic sample corpus (data/sample)"),
}
"""Every action of ``hiersum``, in the order ``hiersum --help`` lists them."""


def index() -> str:
    """The text of ``hiersum --help``."""
    width = max(map(len, ACTIONS))
    rows = "\n".join(f"  {name:<{width}}  {action.summary}" for name, action in ACTIONS.items())
    return (
        f"usage: {PROG} <action> [options]\n\n"
        "Hierarchical Transformers for multi-document summarization (Liu & Lapata, ACL 2019).\n\n"
        f"actions:\n{rows}\n\n"
        f"'{PROG} <action> --help' tells what an action reads and writes, its main options and an example.\n"
        "Options are Hydra overrides (key=value, e.g. model=paper trainer.max_epochs=20), except for\n"
        "average-checkpoints, import-hiersumm and make-sample, which take --flags.\n"
        "Exit status: 0 done, 2 usage error (one line on stderr), 3 some input records refused.\n"
    )


def _usage_error(message: str) -> NoReturn:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


def main(argv: list[str] | None = None) -> None:
    """Run ``hiersum`` with ``argv`` (default: the process's command line)."""
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
    module = importlib.import_module(ACTIONS[name].module)
    saved = os.environ.get(ACTION_VARIABLE)
    os.environ[ACTION_VARIABLE] = name  # for the processes the action starts, and for them only
    try:
        module.main(rest, prog=f"{PROG} {name}")
    finally:
        if saved is None:
            os.environ.pop(ACTION_VARIABLE, None)
        else:
            os.environ[ACTION_VARIABLE] = saved


if __name__ == "__main__":
    main()
