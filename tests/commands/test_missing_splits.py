"""Corpora released without a split, end to end on a tiny CNN/DailyMail corpus (in process): ``hiersum train`` on
a folder without the test split finds it out before the fit, trains and validates, then ends with one line
saying it skipped the test scoring and how to score it; ``hiersum evaluate checkpoint=CKPT data.path=DIR
split=test`` scores a folder holding only the test split, in the checkpoint's format."""

from __future__ import annotations

import contextlib
import io
import json
import logging
from pathlib import Path

import pytest
import torch

import hiersum.commands.train as train_command
from hiersum.commands.evaluate import evaluate
from hiersum.commands.train import train
from tests.data.test_datasets_corpora import native_records, write_corpus
from tests.helpers.config import compose_config, tiny_train_config
from tests.helpers.threads import one_thread

pytestmark = pytest.mark.slow


def cnndm_rows(split: str) -> list[dict]:
    """The tiny corpus's ``split`` as CNN/DailyMail rows (the summary's sentences a line)."""
    return [{"id": r["id"], "article": "\n\n".join(r["documents"]), "highlights": r["summary"].replace(". ", ".\n")}
            for r in native_records(split)]


def cnndm_corpus(folder: Path, *splits: str) -> Path:
    return write_corpus(folder, {split: cnndm_rows(split) for split in splits}, "parquet")


def train_config(folder: Path, run_dir: Path, device: torch.device, *extra: str):
    return tiny_train_config(folder, run_dir, device, "data=cnndm", "trainer.max_epochs=1", *extra)


@pytest.fixture(scope="module")
def without_test(tmp_path_factory: pytest.TempPathFactory, device: torch.device) -> tuple[Path, dict, str]:
    """(corpus, metrics, stdout) of ``hiersum train data=cnndm`` on a corpus of train and validation only."""
    folder = cnndm_corpus(tmp_path_factory.mktemp("cnndm") / "corpus", "train", "validation")
    cfg = train_config(folder, tmp_path_factory.mktemp("trained") / "run", device)
    with one_thread(), contextlib.redirect_stdout(io.StringIO()) as stdout:
        metrics = train(cfg)
    return folder, metrics, stdout.getvalue()


def test_train_without_a_test_split_trains_then_says_in_one_line_how_to_score_it(without_test):
    folder, metrics, stdout = without_test
    best = metrics["best_checkpoint"]
    assert Path(best).is_file() and metrics["validation_loss"] is not None and "test" not in metrics
    lines = [line for line in stdout.splitlines() if "scoring" in line]
    assert len(lines) == 1 and lines[0].startswith("skipped the test scoring: ")
    assert "expected the parquet files of a split 'test' (test.parquet or" in lines[0]
    assert lines[0].endswith(f"score it once it is there: hiersum evaluate checkpoint={best} "
                             f"data.path={folder} split=test")


def test_evaluate_scores_a_test_only_folder_in_the_checkpoints_format(without_test, tmp_path, capsys):
    _, trained, _ = without_test
    folder = cnndm_corpus(tmp_path / "test-only", "test")
    options = [f"checkpoint={trained['best_checkpoint']}", f"data.path={folder}", "split=test",
               "bootstrap.samples=0", "baselines=[lead]"]
    metrics = evaluate(compose_config("evaluate", options, tmp_path / "eval"), {"path"})
    assert metrics["data_format"] == "cnndm" and metrics["n_examples"] == 8
    assert set(metrics["test"]) == {"model", "lead"}
    predictions = [json.loads(line) for line in (tmp_path / "eval" / "predictions.jsonl").read_text().splitlines()]
    assert [p["reference"] for p in predictions] == [r["highlights"] for r in cnndm_rows("test")]
    assert f"run directory: {tmp_path / 'eval'}" in capsys.readouterr().out


class _Fitted(Exception):
    """Raised by the stand-in of the fit: the test needs only what the fit was given."""


@pytest.mark.parametrize(("eval_split", "fitted_eval_split", "warned"), [("test", None, True),
                                                                       ("validation", "validation", False)])
def test_the_missing_test_split_is_found_before_the_fit(eval_split, fitted_eval_split, warned, tmp_path, device,
                                                        monkeypatch, caplog):
    folder = cnndm_corpus(tmp_path / "corpus", "train", "validation")
    given = []

    def fit(cfg, *_given, **_options):
        given.append(cfg.eval_split)
        raise _Fitted

    monkeypatch.setattr(train_command, "fit", fit)
    with caplog.at_level(logging.WARNING, logger="hiersum"), pytest.raises(_Fitted):
        train(train_config(folder, tmp_path / "run", device, f"eval_split={eval_split}"))
    assert given == [fitted_eval_split]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert bool(warnings) == warned
    if warned:
        assert "split 'test'" in warnings[0] and warnings[0].endswith("training and validating, without the test "
                                                                      "scoring")


def test_a_run_that_saved_no_checkpoint_names_none_to_score(tmp_path, device, capsys):
    folder = cnndm_corpus(tmp_path / "corpus", "train", "validation")
    train(train_config(folder, tmp_path / "run", device, "debug=fast_dev_run", "callbacks=none"))
    lines = [line for line in capsys.readouterr().out.splitlines() if "scoring" in line]
    assert len(lines) == 1 and lines[0].startswith("skipped the test scoring: ")
    assert lines[0].endswith("this run saved no checkpoint to score it with (its callbacks have no model_checkpoint)")
    assert "last.ckpt" not in lines[0]
