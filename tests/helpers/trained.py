"""The tiny run the commands and serving tests read: a tiny model trained once per session, in process, by
``train(cfg)`` of ``hiersum-train`` (two epochs, checkpoints selected on validation ROUGE, the test split scored).
Session fixtures, registered for every test by ``tests/conftest.py``. Under pytest-xdist the workers share one
run: the first to need it trains it in the folder of the whole session, under a file lock
(:func:`tests.helpers.shared.made_once`), and writes what ``train`` returned beside it; the others read that (the
tests only read the run; one that changes it copies it)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest
import torch

from hiersum.commands.train import train
from hiersum.data.prepared import PREPARED_DIR_VARIABLE
from tests.helpers.config import tiny_train_config
from tests.helpers.shared import made_once


@dataclass(frozen=True)
class TrainedRun:
    run_dir: Path
    metrics: dict[str, Any]
    """What ``train`` returned."""
    stdout: str
    log: list[str]
    """The messages logged by ``hiersum`` (the lines of the run's train.log under Hydra)."""
    corpus: Path
    """The corpus it trained on: the tiny corpus of the worker that trained it."""
    prepared_dir: Path
    """Where that worker's run prepared the corpus (``$HIERSUM_PREPARED_DIR``): each worker has its own."""


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture(scope="session")
def trained(tiny_corpus: Path, tmp_path_factory: pytest.TempPathFactory, device: torch.device,
            worker_id: str) -> TrainedRun:
    def make(folder: Path) -> None:
        run = train_tiny_run(tiny_corpus, folder / "run", device)
        (folder / RECORD).write_text(json.dumps({**asdict(run), **{name: str(getattr(run, name)) for name in PATHS}}),
                                     encoding="utf-8")

    fields = json.loads((made_once(tmp_path_factory, worker_id, f"trained-{device}", make) / RECORD)
                        .read_text(encoding="utf-8"))
    return TrainedRun(**{**fields, **{name: Path(fields[name]) for name in PATHS}})


RECORD = "trained.json"
"""What ``train`` returned and logged, beside the run (the workers that did not train it read it)."""
PATHS = ("run_dir", "corpus", "prepared_dir")
"""The fields of :class:`TrainedRun` that are paths (strings in its JSON record)."""


def train_tiny_run(tiny_corpus: Path, run_dir: Path, device: torch.device) -> TrainedRun:
    cfg = tiny_train_config(
        tiny_corpus, run_dir, device, "trainer.max_epochs=2", "trainer.log_every_n_steps=1",
        "data.limit_eval_examples=4",
        "callbacks=val_rouge", "callbacks.val_rouge.n_examples=4", "callbacks.val_rouge.decode.max_length=8",
        "callbacks.model_checkpoint.monitor=val/rougeL", "callbacks.model_checkpoint.mode=max",
        "callbacks.model_checkpoint.save_top_k=2",
    )
    logger, handler = logging.getLogger("hiersum"), _Lines()
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        with contextlib.redirect_stdout(io.StringIO()) as stdout:  # at made_once's one thread
            metrics = train(cfg)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return TrainedRun(run_dir, metrics, stdout.getvalue(), handler.lines, tiny_corpus,
                      Path(os.environ[PREPARED_DIR_VARIABLE]))


@pytest.fixture(scope="session")
def trained_run(trained: TrainedRun) -> Path:
    return trained.run_dir


@pytest.fixture(scope="session")
def checkpoint(trained_run: Path) -> Path:
    return trained_run / "checkpoints" / "last.ckpt"
