"""``hiersum-prepare`` and prepared data in ``hiersum-train``: a corpus prepared once and trained on without
being read again, malformed records of any split (one line and exit 2, or skipped and listed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hiersum.commands.evaluate import evaluate
from hiersum.commands.prepare import prepare
from hiersum.commands.train import train
from hiersum.data import corpus_tokenizer as corpus_tokenizer_module
from hiersum.data import prepared as prepared_module
from hiersum.data.schema import RecordError
from tests.helpers.cli import assert_usage_error, run_cli, run_in_process, train_args
from tests.helpers.config import TINY_OVERRIDES, compose_config, train_overrides
from tests.helpers.corpus import write_with_bad_validation_line

DATA_OVERRIDES = [o for o in TINY_OVERRIDES if o.startswith(("model=", "tokenizer.", "data."))]
"""The options of the tiny runs that ``hiersum-prepare`` shares with ``hiersum-train``."""


def test_train_on_a_prepared_corpus_reads_no_split_and_trains_no_tokenizer(
    tiny_corpus, tmp_path, monkeypatch, capsys
):
    cache = tmp_path / "cache"
    options = [*DATA_OVERRIDES, f"data.path={tiny_corpus}", f"data.cache_dir={cache}"]
    report = prepare(compose_config("prepare", options, tmp_path / "prepare"))
    assert {split: entry["examples"] for split, entry in report.items()} == {"train": 40, "validation": 8, "test": 8}
    assert all(Path(entry["folder"]).parent == cache for entry in report.values())
    assert "train: 40 examples, 0 records left out" in capsys.readouterr().out

    def refuse(*args, **kwargs):
        raise AssertionError("read and encoded again")

    monkeypatch.setattr(prepared_module, "_write_split", refuse)
    monkeypatch.setattr(corpus_tokenizer_module, "train_tokenizer", refuse)
    cfg = compose_config("train", train_overrides(tiny_corpus, f"data.cache_dir={cache}", "debug=fast_dev_run"),
                         tmp_path / "run")
    metrics = train(cfg)
    assert metrics["n_examples"] == 4 and metrics["test"]["model"]["perplexity"] > 1.0
    assert not (tmp_path / "run" / "data_errors.jsonl").exists()


def test_on_error_skip_trains_without_the_malformed_record_and_lists_it(tiny_corpus, tmp_path, capsys):
    corpus = write_with_bad_validation_line(tiny_corpus, tmp_path / "corpus")
    cfg = compose_config("train", train_overrides(corpus, "data.on_error=skip", "debug=fast_dev_run"),
                         tmp_path / "run")
    metrics = train(cfg)
    errors_file = tmp_path / "run" / "data_errors.jsonl"
    listed = [json.loads(line) for line in errors_file.read_text().splitlines()]
    assert [(e["split"], e["file"], e["line"], e["field"]) for e in listed] == [
        ("validation", str(corpus / "validation.jsonl"), 3, "summary")]
    # counted where people look: the run's last line, metrics.json and the report
    assert capsys.readouterr().out.splitlines()[-1] == f"1 records skipped (see {errors_file})"
    assert (metrics["records_skipped"], metrics["records_skipped_file"]) == (1, str(errors_file))
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["records_skipped"] == 1
    assert "- records_skipped: `1`" in (tmp_path / "run" / "report.md").read_text()


def test_evaluate_and_prepare_count_the_records_they_skip(tiny_corpus, tiny_cfg, tmp_path, capsys):
    corpus = write_with_bad_validation_line(tiny_corpus, tmp_path / "corpus")
    report = prepare(compose_config("prepare", [*DATA_OVERRIDES, f"data.path={corpus}", "data.on_error=skip"],
                                    tmp_path / "prepare"))
    assert report["validation"]["errors"] == 1
    assert f"1 records skipped (see {tmp_path / 'prepare' / 'data_errors.jsonl'})" in capsys.readouterr().out
    predictions = tmp_path / "predictions.jsonl"
    valid = [json.loads(line) for n, line in enumerate((corpus / "validation.jsonl").open(), start=1) if n != 3]
    predictions.write_text("".join(json.dumps({"id": record["id"], "summary": "x"}) + "\n" for record in valid))
    metrics = evaluate(tiny_cfg(f"predictions={predictions}", f"data.path={corpus}", "split=validation",
                                "data.on_error=skip", "bootstrap.samples=0", name="evaluate",
                                output_dir=tmp_path / "eval"))
    assert metrics["records_skipped"] == 1 and "1 records skipped" in capsys.readouterr().out


@pytest.mark.slow
def test_a_malformed_validation_record_is_one_line_and_exit_2(tiny_corpus, tmp_path, monkeypatch, capsys):
    """``hiersum-train`` in process (its ``main``: exit status and stderr), ``hiersum-prepare`` as a process (the
    console script end to end)."""
    corpus = write_with_bad_validation_line(tiny_corpus, tmp_path / "corpus")
    result = run_in_process("hiersum-train", train_args(corpus, tmp_path / "run", "debug=fast_dev_run"), monkeypatch,
                            capsys)
    assert_usage_error(result.returncode, result.stderr, f"{corpus / 'validation.jsonl'}:3: field 'summary': "
                       "expected a string or a list of strings, found int")
    result = run_cli("hiersum-prepare", [*DATA_OVERRIDES, f"data.path={corpus}",
                                         f"hydra.run.dir={tmp_path / 'prepare'}"], check=False)
    assert_usage_error(result.returncode, result.stderr, "validation.jsonl:3: field 'summary'")


@pytest.mark.slow
def test_evaluate_finds_the_split_the_training_prepared(trained, tiny_cfg, tmp_path, monkeypatch):
    monkeypatch.setattr(prepared_module, "_write_split", lambda *a, **k: pytest.fail("prepared again"))
    # the corpus and prepared folder of the pytest-xdist worker that trained the session's run (maybe another)
    monkeypatch.setenv(prepared_module.PREPARED_DIR_VARIABLE, str(trained.prepared_dir))
    options = [f"data.path={trained.corpus}", f"checkpoint={trained.run_dir / 'checkpoints' / 'last.ckpt'}",
               "split=test", "data.limit_eval_examples=2", "bootstrap.samples=0", "baselines=[lead]",
               "attention_examples=0", "decode.max_length=4", "decode.min_length=0"]
    metrics = evaluate(tiny_cfg(*options, name="evaluate", output_dir=tmp_path / "eval"), options)
    assert metrics["n_examples"] == 2  # the checkpoint's tokenizer and selection found the training's folder


@pytest.mark.slow
def test_evaluate_scores_predictions_without_a_malformed_record_when_skipping(tiny_corpus, tiny_cfg, tmp_path):
    corpus = write_with_bad_validation_line(tiny_corpus, tmp_path / "corpus")
    ids = [json.loads(line)["id"] for line in (corpus / "validation.jsonl").read_text().splitlines()]
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps({"id": i, "summary": "a summary"}) + "\n" for i in ids[:2] + ids[3:]))
    options = [f"data.path={corpus}", f"predictions={predictions}", "split=validation", "bootstrap.samples=0",
               "baselines=[lead]"]
    with pytest.raises(RecordError, match="validation.jsonl:3: field 'summary'"):
        evaluate(tiny_cfg(*options, name="evaluate", output_dir=tmp_path / "eval"), options)
    options.append("data.on_error=skip")
    metrics = evaluate(tiny_cfg(*options, name="evaluate", output_dir=tmp_path / "eval"), options)
    assert metrics["n_examples"] == 7
    listed = [json.loads(line) for line in (tmp_path / "eval" / "data_errors.jsonl").read_text().splitlines()]
    assert [(e["split"], e["line"], e["field"]) for e in listed] == [("validation", 3, "summary")]
