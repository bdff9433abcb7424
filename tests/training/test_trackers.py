"""The trackers' part of a run (:mod:`hiersum.training.trackers`): a tracker whose package is missing stops the run
before anything is prepared, in one line naming the extra; an MLflow file store is allowed unless the environment says
otherwise; a tracker is known by its Lightning logger class; the figures of ``metrics.json`` become metric names.
The run itself, read back by MLflow and W&B: ``tests/commands/test_train_trackers.py``."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
from pytorch_lightning.loggers import CSVLogger

from hiersum.commands.train import train
from hiersum.errors import UsageError
from hiersum.training.trackers import MLFLOW_FILE_STORE, TRACKERS, prepare_trackers, run_figures, tracker_of


@pytest.mark.parametrize(("logger", "name", "extra"), [("mlflow", "MLflow", "mlflow"),
                                                       ("wandb", "Weights & Biases", "wandb")])
def test_a_missing_tracker_stops_the_run_before_anything_in_one_line(logger, name, extra, tiny_cfg, tmp_path,
                                                                     monkeypatch):
    target = "MLFlowLogger" if logger == "mlflow" else "WandbLogger"
    monkeypatch.setitem(TRACKERS, target, replace(TRACKERS[target], package="hiersum_no_such_package"))
    with pytest.raises(UsageError) as error:
        train(tiny_cfg(f"logger={logger}"))
    assert str(error.value) == f"logger.{logger} needs {name}, the {extra} extra: pip install -e '.[{extra}]'"
    assert not (tmp_path / "run" / "tokenizer").exists()  # refused before the tokenizer, the corpus and the fit


@pytest.mark.parametrize(("uri", "before", "after"), [
    ("file:/runs/mlruns", None, "true"),
    ("/runs/mlruns", None, "true"),
    ("file:/runs/mlruns", "false", "false"),  # what the user set is kept
    ("sqlite:///runs/mlflow.db", None, None),
    ("http://tracking:5000", None, None),
])
def test_an_mlflow_file_store_is_allowed_unless_the_environment_says_otherwise(uri, before, after, monkeypatch):
    pytest.importorskip("mlflow", reason="no mlflow package (make ci-deps)")  # the check of the extra comes first
    monkeypatch.setenv(MLFLOW_FILE_STORE, "unset")  # as it was, after the test
    monkeypatch.delenv(MLFLOW_FILE_STORE)
    if before is not None:
        monkeypatch.setenv(MLFLOW_FILE_STORE, before)
    prepare_trackers({"mlflow": {"_target_": "lightning.pytorch.loggers.MLFlowLogger", "tracking_uri": uri},
                      "csv": {"_target_": "pytorch_lightning.loggers.CSVLogger"}, "off": None})
    assert os.environ.get(MLFLOW_FILE_STORE) == after


def test_a_tracker_is_known_by_its_lightning_class_or_one_it_derives_from(tmp_path):
    class MLFlowLogger:  # the name is what counts: no mlflow import
        pass

    class TeamLogger(MLFlowLogger):
        pass

    assert tracker_of(TeamLogger()) is TRACKERS["MLFlowLogger"]
    assert tracker_of(CSVLogger(tmp_path)) is None  # the run directory's own log gets nothing more


def test_the_figures_of_the_metrics_are_its_numbers_by_path():
    metrics = {
        "run_dir": "/runs/r1", "best_checkpoint": None, "validation_loss": 2.5, "n_examples": 4,
        "test": {"model": {"rougeL": 31.0, "bleu": 7.5, "bleu_signature": "nrefs:1|...", "ci": [30.0, 32.0],
                           "mean_over_references": {"rouge1": 40.0}},
                 "model vs lead": {"p_value": 0.04, "significant": True}},
        "versions": {"torch": "2.13.0"}, "machine": {"cpu_count": 2}, "decode": {"beam_size": 4},
        "mfu_peak": {"gflops": 187.4, "source": "cpu roof"},
    }
    assert run_figures(metrics) == {
        "validation_loss": 2.5, "n_examples": 4.0, "test/model/rougeL": 31.0, "test/model/bleu": 7.5,
        "test/model/mean_over_references/rouge1": 40.0, "test/model vs lead/p_value": 0.04,
        "mfu_peak/gflops": 187.4,
    }
    assert run_figures({"test": {"model+copy": {"rouge1": 1.0}}}) == {"test/model_copy/rouge1": 1.0}
