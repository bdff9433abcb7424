"""``hiersum-train``: the session's tiny run (in process: checkpoints, logs, validation ROUGE, the test
report) and a refused option (a subprocess: there the process matters). DDP on two CPU processes is
tests/training/test_dead_worker.py's run never interrupted (both ranks train, rank 0 alone scores)."""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers.cli import alias, assert_usage_error, run_cli, run_main

PROG = alias("train")

pytestmark = pytest.mark.slow


def test_train_writes_the_test_report_with_the_best_checkpoint(trained):
    run_dir = trained.run_dir
    assert f"run directory: {run_dir}" in trained.stdout
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics == json.loads(json.dumps(trained.metrics))
    assert metrics["n_examples"] == 4
    assert metrics["sentence_splitter"] == "nltk.punkt"
    for system in ("model", "lead"):
        assert {"rouge1", "rouge2", "rougeL", "rougeLsum", "bleu"} <= set(metrics["test"][system])
    assert metrics["test"]["model"]["perplexity"] > 1.0 and math.isfinite(metrics["validation_loss"])
    predictions = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert [p["id"] for p in predictions] == [f"test-{i:06d}" for i in range(1, 5)]
    main_table = (run_dir / "report.md").read_text().split("## Split: test")[1].split("\n\n")[1]
    assert main_table.count("| model |") == 1 and main_table.count("| oracle |") == 1
    assert (run_dir / "report.html").is_file()
    with open(run_dir / "scores.csv", newline="") as handle:
        systems = Counter(row["system"] for row in csv.DictReader(handle))
    assert systems == {"model": 4, "lead": 4, "lead3": 4, "oracle": 4, "lexrank": 4}
    assert (run_dir / "tokenizer" / "tokenizer.json").is_file()


def test_train_logs_one_summary_line_per_epoch(trained):
    for epoch in (0, 1):
        lines = [line for line in trained.log if line.startswith(f"epoch {epoch}, step ")]
        assert len(lines) == 1 and "train/loss" in lines[0] and "val/loss" in lines[0], trained.log


def test_train_saves_the_best_checkpoints_by_validation_rouge_and_the_last(trained):
    run_dir = trained.run_dir
    best = Path(trained.metrics["best_checkpoint"])
    assert best.is_file() and best.parent == run_dir / "checkpoints"
    assert (run_dir / "checkpoints" / "last.ckpt").is_file()
    assert len(list((run_dir / "checkpoints").glob("epoch*.ckpt"))) == 2  # save_top_k=2 of 2 epochs
    with open(run_dir / "csv" / "metrics.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {"train/loss", "val/loss", "val/perplexity", "lr-Adam", "val/rougeL"} <= set(rows[0])
    rouge = [float(row["val/rougeL"]) for row in rows if row.get("val/rougeL")]
    assert len(rouge) == 2 and all(0.0 <= value <= 100.0 for value in rouge)
    assert sum(1 for row in rows if row.get("train/loss")) >= 2  # log_every_n_steps=1


def test_an_option_hydra_refuses_is_a_usage_error(tmp_path):
    result = run_cli("hiersum-train", ["trainer.max_epoch=3", f"hydra.run.dir={tmp_path / 'run'}"], check=False)
    assert_usage_error(result.returncode, result.stderr, f"{PROG}: error:", "max_epoch")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("option", "expected"), [("model=huge", "model/huge"), ("model.d_model=big", "d_model"),
                                                ("data=csv", "data/csv")])
def test_options_hydra_refuses_exit_2_in_one_line(option, expected, tmp_path, monkeypatch, capsys):
    code, stderr = run_main("train", [option, f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch, capsys)
    assert_usage_error(code, stderr, f"{PROG}: error:", expected)
    assert not (tmp_path / "run").exists()
