"""The commands on their typed configs, built in Python without Hydra, and the option checks of those
configs: each refuses a bad value in ``__post_init__`` with the option's name (which ``command_config`` turns
into a one-line usage error)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from hiersum.commands.evaluate_selection import evaluate_selection_command
from hiersum.config import (
    BootstrapConfig,
    DataConfig,
    EvaluateSelectionConfig,
    UsageError,
    command_config,
)


def selection_config(corpus: Path | str, run_dir: Path | str, **changes: Any) -> EvaluateSelectionConfig:
    """``hiersum evaluate-selection`` on ``corpus``'s validation split, first and tf-idf order, 1 and 3 paragraphs."""
    values = dict(task_name="evaluate_selection", split="validation", strategies=["first", "tfidf"], ranker=None,
                  budgets=[1, 3], limit_examples=4, bootstrap=BootstrapConfig(samples=0),
                  data=DataConfig(path=str(corpus)), paths={"output_dir": str(run_dir)})
    return EvaluateSelectionConfig(**{**values, **changes})


CHECKS = [  # (what builds a valid config, the change it refuses, the option named, a part of the message)
    (selection_config, {"strategies": ["first", "best"]}, "strategies", "found ['first', 'best']"),
    (selection_config, {"strategies": []}, "strategies", "one or more of first, round_robin, tfidf, ranker, oracle"),
    (selection_config, {"budgets": [3, 0]}, "budgets", "integers >= 1, found [3, 0]"),
    (selection_config, {"budgets": []}, "budgets", "found []"),
    (selection_config, {"strategies": ["ranker"]}, "ranker=PATH", "found ranker=None"),
]


@pytest.mark.parametrize(("build", "change", "option", "message"), CHECKS,
                         ids=[f"{build.__name__}-{option}-{i}" for i, (build, _, option, _) in enumerate(CHECKS)])
def test_each_option_check_raises_from_the_dataclass_naming_the_option(build, change, option, message, tmp_path):
    valid = build(tmp_path / "corpus", tmp_path / "run")
    with pytest.raises(ValueError, match=option) as error:
        replace(valid, **change)
    assert message in str(error.value) and not isinstance(error.value, UsageError)
    composed = OmegaConf.structured(valid)  # as Hydra composes it, with the refused value
    for key, value in change.items():
        OmegaConf.update(composed, key, value, merge=False)
    with pytest.raises(UsageError, match=option):  # the command's conversion: one usage line
        command_config(composed, type(valid), usage="hiersum <action>")


def test_evaluate_selection_runs_on_its_typed_config(tiny_corpus, tmp_path):
    report = evaluate_selection_command(selection_config(tiny_corpus, tmp_path / "run"))
    assert report["examples"] == 4 and set(report["recall"]) == {"first", "tfidf"}
    assert json.loads((tmp_path / "run" / "selection.json").read_text()) == json.loads(json.dumps(report))

