"""The table of ``hiersum``'s actions, after litgpt's ``__main__.py``: adding an action is its function and one
entry here, plus its config and help (``docs/extending.md#a-new-action``).

Everything that lists the actions reads :data:`ACTIONS`: ``hiersum <action>`` (:mod:`hiersum.cli.main`), the
index of ``hiersum --help``, the schemas registered for the primary configs (:mod:`hiersum.cli.config_store`),
and the tests that check the ``hiersum-<action>`` console scripts of pyproject.toml, the help pages and the docs.
This module imports nothing heavy: ``hiersum --help`` answers from it before torch or Hydra load.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Action:
    """One action of ``hiersum``."""

    function: str
    """``module:name`` of its function, imported when the action runs. With a :attr:`config`, the function of
    the composed config (``function(cfg)``; it may ``sys.exit`` with a status of its own); without, an
    argparse entry point ``function(argv, *, prog)``."""
    summary: str
    """One line for ``hiersum --help``."""
    config: str | None = None
    """Its primary config: ``conf/<config>.yaml``, composed by Hydra with the command line, its help page
    ``conf/hydra/help/<config>.yaml``; None for an action that parses ``--flags`` itself."""
    schema: str | None = None
    """``module:name`` of the dataclass that types :attr:`config` (registered as ``<config>_schema``)."""

    def load(self) -> Callable[..., Any]:
        """The function :attr:`function` names (its module imported now)."""
        return load_object(self.function)


def load_object(path: str) -> Any:
    """The object ``module:name`` names."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


ACTIONS: dict[str, Action] = {
    "train": Action("hiersum.cli.train:run",
                    "fit a model on a corpus, then score its best checkpoint on the test split",
                    config="train", schema="hiersum.config.train:TrainConfig"),
    "evaluate": Action("hiersum.cli.evaluate:run",
                       "score a checkpoint (decoding a split) or a predictions file; write the report",
                       config="evaluate", schema="hiersum.config.evaluate:EvaluateConfig"),
    "summarize": Action("hiersum.cli.summarize:run",
                        "summarize JSONL records, text files or stdin with a checkpoint, resumably",
                        config="summarize", schema="hiersum.config.summarize:SummarizeConfig"),
    "serve": Action("hiersum.cli.serve:run",
                    "serve a checkpoint over HTTP (LitServe): batched requests, a page at /",
                    config="serve", schema="hiersum.config.serve:ServeConfig"),
    "prepare": Action("hiersum.commands.prepare:prepare", "tokenize a corpus's splits once into prepared shards",
                      config="prepare", schema="hiersum.config.prepare:PrepareConfig"),
    "rank": Action("hiersum.cli.rank:run", "keep the top paragraphs of raw documents (trained ranker or tf-idf)",
                   config="rank", schema="hiersum.config.rank:RankConfig"),
    "train-ranker": Action("hiersum.commands.train_ranker:train_ranker",
                           "train the paragraph ranker of Liu & Lapata (2019)",
                           config="train_ranker", schema="hiersum.config.train_ranker:RankerTrainConfig"),
    "evaluate-selection": Action("hiersum.commands.evaluate_selection:evaluate_selection_command",
                                 "how much of the references each paragraph selection keeps",
                                 config="evaluate_selection", schema="hiersum.config.evaluate:EvaluateSelectionConfig"),
    "average-checkpoints": Action("hiersum.cli.average_checkpoints:main",
                                  "average the weights of several checkpoints"),
    "export": Action("hiersum.commands.export:export",
                     "write a checkpoint as a model directory (safetensors, config.json, tokenizer, model card)",
                     config="export", schema="hiersum.config.summarize:ExportConfig"),
    "import-hiersumm": Action("hiersum.cli.import_hiersumm:main", "convert an official hiersumm checkpoint"),
    "make-sample": Action("hiersum.cli.make_sample:main",
                          "regenerate the synthetic sample corpus (data/sample)"),
}
"""Every action of ``hiersum``, in the order ``hiersum --help`` lists them; each also has the console script
``hiersum-<action>`` (pyproject.toml), the same entry point."""
