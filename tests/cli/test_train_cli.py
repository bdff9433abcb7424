"""End-to-end runs of the Hydra entry points on a tiny corpus (subprocesses, CPU)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.cli.cli_testkit import run_cli, train_args
from tests.conftest import PROJECT_ROOT


@pytest.mark.slow
def test_train_fast_dev_run_end_to_end_writes_report(tiny_corpus, tmp_path):
    run_dir = tmp_path / "run"
    result = run_cli("hiersum-train", train_args(tiny_corpus, run_dir, "debug=fast_dev_run"))
    assert f"run directory: {run_dir}" in result.stdout
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["n_examples"] == 4
    for system in ("model", "lead"):
        assert {"rouge1", "rouge2", "rougeL", "rougeLsum", "bleu"} <= set(metrics["test"][system])
    assert metrics["test"]["model"]["perplexity"] > 1.0
    predictions = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert [p["id"] for p in predictions] == [f"test-{i:06d}" for i in range(1, 5)]
    main_table = (run_dir / "report.md").read_text().split("## Split: test")[1].split("\n\n")[1]
    assert main_table.count("| model |") == 1 and main_table.count("| oracle |") == 1
    assert (run_dir / "report.html").is_file()
    with open(run_dir / "scores.csv", newline="") as handle:
        systems = Counter(row["system"] for row in csv.DictReader(handle))
    assert systems == {"model": 4, "lead": 4, "oracle": 4, "lexrank": 4}
    assert (run_dir / "tokenizer" / "tokenizer.json").is_file()
    assert (run_dir / ".hydra" / "config.yaml").is_file()
    epoch_lines = [line for line in (run_dir / "train.log").read_text().splitlines() if "epoch 0, step 1," in line]
    assert len(epoch_lines) == 1 and "train/loss" in epoch_lines[0] and "val/loss" in epoch_lines[0]


@pytest.mark.slow
def test_train_saves_best_and_last_checkpoints_and_logs(trained_run):
    metrics = json.loads((trained_run / "metrics.json").read_text())
    best = Path(metrics["best_checkpoint"])
    assert best.is_file() and best.parent == trained_run / "checkpoints"
    assert (trained_run / "checkpoints" / "last.ckpt").is_file()
    header = (trained_run / "csv" / "metrics.csv").read_text().splitlines()[0].split(",")
    assert {"train/loss", "val/loss", "val/perplexity", "lr-Adam"} <= set(header)


@pytest.mark.slow
def test_evaluate_cli_scores_a_split_with_a_checkpoint(trained_run, tiny_corpus, tmp_path):
    run_dir = tmp_path / "eval"
    run_cli("hiersum-evaluate", [f"checkpoint={trained_run / 'checkpoints' / 'last.ckpt'}",
                                 f"data.path={tiny_corpus}", "split=validation", "decode=greedy",
                                 f"hydra.run.dir={run_dir}"])
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["n_examples"] == 8 and metrics["split"] == "validation"
    assert set(metrics["validation"]) == {"model", "lead", "oracle", "lexrank"}


@pytest.mark.slow
@pytest.mark.parametrize("program", ["hiersum-summarize", "scripts/summarize.py"])
def test_summarize_reports_a_malformed_line_and_summarizes_the_rest(trained_run, tiny_corpus, tmp_path, program):
    lines = (tiny_corpus / "test.jsonl").read_text().splitlines()[:4]
    lines.insert(2, '{"id": "broken", "documents": 7}')
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n")
    output = tmp_path / "out.jsonl"
    args = [f"checkpoint={trained_run / 'checkpoints' / 'last.ckpt'}", f"input={source}", f"output={output}",
            f"hydra.run.dir={tmp_path / 'hydra'}"]
    if program.endswith(".py"):
        result = subprocess.run([sys.executable, str(PROJECT_ROOT / program), *args], cwd=PROJECT_ROOT,
                                capture_output=True, text=True, timeout=600)
    else:
        result = run_cli(program, args, check=False)
    assert result.returncode == 3
    assert f"{source}:3: field 'documents'" in result.stderr
    records = [json.loads(line) for line in output.read_text().splitlines()]
    assert [r["id"] for r in records] == ["test-000001", "test-000002", "test-000003", "test-000004"]
    assert all(isinstance(r["summary"], str) for r in records)
    errors = [json.loads(line) for line in (tmp_path / "out.errors.jsonl").read_text().splitlines()]
    assert [(e["line"], e["id"], e["field"]) for e in errors] == [(3, "broken", "documents")]


@pytest.mark.slow
def test_ddp_two_cpu_processes_train_a_few_steps(tiny_corpus, tmp_path):
    run_dir = tmp_path / "ddp"
    result = run_cli("hiersum-train", train_args(
        tiny_corpus, run_dir, "trainer=ddp", "trainer.accelerator=cpu", "trainer.devices=2",
        "+trainer.max_steps=3", "trainer.max_epochs=1", "+trainer.limit_val_batches=2", "eval_split=null",
        "callbacks=none",
    ))
    assert "world_size: 2" in result.stdout + result.stderr or "GLOBAL_RANK: 1" in result.stdout + result.stderr
    assert f"run directory: {run_dir}" in result.stdout
    assert (run_dir / "csv" / "metrics.csv").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("command", ["hiersum-train", "hiersum-evaluate"])
def test_an_option_hydra_refuses_is_a_usage_error(command, tmp_path):
    result = run_cli(command, ["trainer.max_epoch=3" if command == "hiersum-train" else "bootstrap.sample=3",
                               f"hydra.run.dir={tmp_path / 'run'}"], check=False)
    assert result.returncode == 2
    assert ("max_epoch" in result.stderr or "sample" in result.stderr) and "Traceback" not in result.stderr
