"""End-to-end runs of hiersum-evaluate (predictions and checkpoint modes), hiersum-average-checkpoints
and the validation-ROUGE callback (subprocesses, CPU)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import torch
from rouge_score import rouge_scorer

from hiersum.checkpoints.io import load_summarizer
from hiersum.evaluation.metrics import ROUGE_TYPES, split_sentences
from tests.cli.cli_testkit import run_cli, train_args
from tests.conftest import SHARED_DIR

SCITLDR = SHARED_DIR / "data" / "scitldr-a"
FAST = ["bootstrap.samples=100"]


def _first_paragraph_predictions(corpus: Path, split: str, path: Path, drop: int = 0, extra: list[str] = ()) -> dict:
    records = [json.loads(line) for line in (corpus / f"{split}.jsonl").read_text().splitlines()]
    predictions = {r["id"]: r["documents"][0].split("\n\n")[0] for r in records[drop:]}
    lines = [json.dumps({"id": i, "summary": s}) for i, s in predictions.items()]
    lines += [json.dumps({"id": i, "summary": "x"}) for i in extra]
    path.write_text("\n".join(lines) + "\n")
    return {r["id"]: r for r in records} | {"_predictions": predictions}


@pytest.mark.slow
def test_predictions_mode_scores_given_outputs_against_the_split(tiny_corpus, tmp_path):
    data = _first_paragraph_predictions(tiny_corpus, "validation", tmp_path / "p.jsonl")
    _first_paragraph_predictions(tiny_corpus, "validation", tmp_path / "same.jsonl")
    run_dir = tmp_path / "eval"
    run_cli("hiersum-evaluate", [f"predictions={tmp_path / 'p.jsonl'}", f"data.path={tiny_corpus}",
                                 "split=validation", f"compare={tmp_path / 'same.jsonl'}",
                                 f"hydra.run.dir={run_dir}", *FAST])
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["n_examples"] == 8 and metrics["split"] == "validation"
    assert set(metrics["validation"]) == {"model", "same", "lead", "oracle", "lexrank"}
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    predictions = data["_predictions"]
    for name in ROUGE_TYPES:
        direct = [scorer.score("\n".join(split_sentences(data[i]["summary"])),
                               "\n".join(split_sentences(p)))[name].fmeasure for i, p in predictions.items()]
        assert metrics["validation"]["model"][name] == pytest.approx(100 * sum(direct) / len(direct))
    assert metrics["significance"]["validation"]["model vs same"]["rouge2"]["p_value"] == pytest.approx(1.0)
    assert "perplexity" not in metrics["validation"]["model"]
    assert {"rouge-score", "sacrebleu"} <= set(metrics["versions"])
    with open(run_dir / "scores.csv", newline="") as handle:
        assert len(list(csv.DictReader(handle))) == 8 * 5
    assert "data:image/png;base64," in (run_dir / "report.html").read_text()


@pytest.mark.slow
def test_predictions_mode_lists_missing_and_extra_ids(tiny_corpus, tmp_path):
    _first_paragraph_predictions(tiny_corpus, "validation", tmp_path / "p.jsonl", drop=2, extra=["nope"])
    result = run_cli("hiersum-evaluate", [f"predictions={tmp_path / 'p.jsonl'}", f"data.path={tiny_corpus}",
                                          "split=validation", f"hydra.run.dir={tmp_path / 'eval'}"], check=False)
    assert result.returncode == 2
    assert "2 example id(s) of the split have no prediction: 'validation-000001', 'validation-000002'" in result.stderr
    assert "1 prediction id(s) are not in the split: 'nope'" in result.stderr
    neither = run_cli("hiersum-evaluate", [f"data.path={tiny_corpus}", f"hydra.run.dir={tmp_path / 'e2'}"],
                      check=False)
    assert neither.returncode == 2 and "exactly one of checkpoint=PATH" in neither.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("option", "message"), [
    ("bootstrap.level=2", "bootstrap.level must be in (0, 1), found 2.0"),
])
def test_bad_scoring_settings_exit_2_with_one_line(tiny_corpus, tmp_path, option, message):
    _first_paragraph_predictions(tiny_corpus, "validation", tmp_path / "p.jsonl")
    args = [f"predictions={tmp_path / 'p.jsonl'}", f"data.path={tiny_corpus}", "split=validation", option,
            f"hydra.run.dir={tmp_path / 'eval'}"]
    result = run_cli("hiersum-evaluate", args, check=False)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("option", ["bootstrap.samples=abc", "baselines=[lead,lexrnk]"])
def test_scoring_settings_of_a_wrong_type_or_choice_are_refused_at_composition(tiny_corpus, tmp_path, option):
    args = [f"predictions={tmp_path / 'p.jsonl'}", f"data.path={tiny_corpus}", "split=validation", option,
            f"hydra.run.dir={tmp_path / 'eval'}"]
    result = run_cli("hiersum-evaluate", args, check=False)
    assert result.returncode == 2
    assert option.split("=")[0] in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.skipif(not SCITLDR.is_dir(), reason="shared SciTLDR-A data not present")
def test_predictions_mode_on_real_scitldr_dev(tmp_path):
    records = [json.loads(line) for line in (SCITLDR / "dev.jsonl").read_text().splitlines()]
    (tmp_path / "first.jsonl").write_text("".join(
        json.dumps({"id": r["paper_id"], "summary": r["source"][0]}) + "\n" for r in records))
    run_dir = tmp_path / "eval"
    run_cli("hiersum-evaluate", ["predictions=" + str(tmp_path / "first.jsonl"), "data=scitldr",
                                 f"data.path={SCITLDR}", "split=dev", "data.limit_eval_examples=60",
                                 f"hydra.run.dir={run_dir}", *FAST])
    dev = json.loads((run_dir / "metrics.json").read_text())["dev"]
    assert dev["oracle"]["rouge1"] > dev["lead"]["rouge1"] > 10
    assert dev["model"]["mean_over_references"]["rouge1"] < dev["model"]["rouge1"]  # several references
    assert "nrefs:var" in dev["model"]["bleu_signature"]


@pytest.mark.slow
def test_checkpoint_mode_reports_token_scores_curves_and_attention(trained_run, tiny_corpus, tmp_path):
    run_dir = tmp_path / "eval"
    run_cli("hiersum-evaluate", [f"checkpoint={trained_run / 'checkpoints' / 'last.ckpt'}",
                                 f"data.path={tiny_corpus}", "split=validation", "decode=greedy",
                                 "attention_examples=2", f"hydra.run.dir={run_dir}", *FAST])
    model = json.loads((run_dir / "metrics.json").read_text())["validation"]["model"]
    assert model["perplexity"] > 1.0 and 0.0 <= model["token_accuracy"] <= 100.0
    page = (run_dir / "report.html").read_text()
    assert "<h2>Training</h2>" in page and page.count("attention validation-") == 2


@pytest.mark.slow
def test_average_checkpoints_gives_a_loadable_mean(trained_run, tmp_path):
    last = trained_run / "checkpoints" / "last.ckpt"
    best = Path(json.loads((trained_run / "metrics.json").read_text())["best_checkpoint"])
    output = tmp_path / "avg.ckpt"
    run_cli("hiersum-average-checkpoints", [str(best), str(last), "--output", str(output)])
    averaged = load_summarizer(output).model.state_dict()
    first, second = load_summarizer(best).model.state_dict(), load_summarizer(last).model.state_dict()
    for key, tensor in averaged.items():
        if tensor.is_floating_point():
            torch.testing.assert_close(tensor, (first[key] + second[key]) / 2)
    # From the run directory: ModelCheckpoint's ranking (save_top_k=1: the best checkpoint alone).
    result = run_cli("hiersum-average-checkpoints", [str(trained_run), "--top-k", "3"])
    assert f"by val/loss: {best.name}" in result.stdout
    ranked = load_summarizer(trained_run / "checkpoints" / "averaged-top1.ckpt").model.state_dict()
    for key, tensor in ranked.items():
        torch.testing.assert_close(tensor, first[key])
    bad = run_cli("hiersum-average-checkpoints", [str(tmp_path / "missing.ckpt")], check=False)
    assert bad.returncode == 2 and "checkpoint not found" in bad.stderr


@pytest.mark.slow
def test_validation_rouge_callback_selects_checkpoints(tiny_corpus, tmp_path):
    run_dir = tmp_path / "run"
    run_cli("hiersum-train", train_args(
        tiny_corpus, run_dir, "trainer.max_epochs=2", "callbacks=val_rouge", "callbacks.val_rouge.n_examples=4",
        "callbacks.val_rouge.decode.max_length=8", "callbacks.model_checkpoint.monitor=val/rougeL",
        "callbacks.model_checkpoint.mode=max", "callbacks.model_checkpoint.save_top_k=2", "eval_split=null"))
    with open(run_dir / "csv" / "metrics.csv", newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row.get("val/rougeL")]
    assert len(rows) == 2 and all(0.0 <= float(row["val/rougeL"]) <= 100.0 for row in rows)
    result = run_cli("hiersum-average-checkpoints", [str(run_dir), "--top-k", "2"])
    assert "averaging the 2 best checkpoints by val/rougeL" in result.stdout
    load_summarizer(run_dir / "checkpoints" / "averaged-top2.ckpt")
