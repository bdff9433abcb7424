"""Fixtures of the CLI tests: a tiny model trained once per session by the real ``hiersum-train``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.cli_testkit import run_cli, train_args


@pytest.fixture(scope="session")
def trained_run(tiny_corpus, tmp_path_factory) -> Path:
    """Two short epochs of the tiny model, with checkpoints."""
    run_dir = tmp_path_factory.mktemp("trained") / "run"
    run_cli("hiersum-train", train_args(tiny_corpus, run_dir, "trainer.max_epochs=2", "data.limit_eval_examples=3",
                                        "trainer.log_every_n_steps=1"))
    return run_dir


@pytest.fixture(scope="session")
def checkpoint(trained_run) -> Path:
    return trained_run / "checkpoints" / "last.ckpt"
