"""``hiersum-evaluate`` (predictions and checkpoint modes, in process through ``evaluate(cfg, overrides)``),
``hiersum-average-checkpoints`` (in process through ``main(argv)``), and the usage errors of
``hiersum-evaluate`` (the script's ``main`` in process, one in a subprocess: exit status and stderr of the console
script)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
import torch
from rouge_score import rouge_scorer

from hiersum.checkpoints.io import load_network
from hiersum.cli import average_checkpoints
from hiersum.commands.evaluate import evaluate
from hiersum.data.sentences import one_sentence_a_line
from hiersum.errors import UsageError
from hiersum.evaluation.machine import machine_description
from hiersum.evaluation.metrics import ROUGE_TYPES
from tests.helpers.cli import alias, assert_usage_error, run_cli, run_in_process, run_main
from tests.helpers.paths import SHARED_DIR

PROG = alias("evaluate")

pytestmark = pytest.mark.slow

SCITLDR = SHARED_DIR / "data" / "scitldr-a"
FAST = ["bootstrap.samples=100"]


@pytest.fixture()
def run_evaluate(tiny_cfg, tiny_corpus, tmp_path):
    """``run_evaluate(*overrides)``: the metrics of ``hiersum-evaluate data.path=<tiny corpus> *overrides``
    run in process, its run directory ``tmp_path / "eval"``."""

    def run(*overrides: str, data_path: Path = tiny_corpus) -> dict:
        options = [f"data.path={data_path}", *overrides]
        return evaluate(tiny_cfg(*options, name="evaluate", output_dir=tmp_path / "eval"), options)

    return run


def _first_paragraph_predictions(corpus: Path, split: str, path: Path, drop: int = 0, extra: list[str] = ()) -> dict:
    records = [json.loads(line) for line in (corpus / f"{split}.jsonl").read_text().splitlines()]
    predictions = {r["id"]: r["documents"][0].split("\n\n")[0] for r in records[drop:]}
    lines = [json.dumps({"id": i, "summary": s}) for i, s in predictions.items()]
    lines += [json.dumps({"id": i, "summary": "x"}) for i in extra]
    path.write_text("\n".join(lines) + "\n")
    return {r["id"]: r for r in records} | {"_predictions": predictions}


def test_predictions_mode_scores_given_outputs_against_the_split(run_evaluate, tiny_corpus, tmp_path, capsys):
    data = _first_paragraph_predictions(tiny_corpus, "validation", tmp_path / "p.jsonl")
    _first_paragraph_predictions(tiny_corpus, "validation", tmp_path / "same.jsonl")
    metrics = run_evaluate(f"predictions={tmp_path / 'p.jsonl'}", "split=validation",
                           f"compare={tmp_path / 'same.jsonl'}", *FAST)
    run_dir = tmp_path / "eval"
    assert f"run directory: {run_dir}" in capsys.readouterr().out
    assert json.loads((run_dir / "metrics.json").read_text()) == json.loads(json.dumps(metrics))
    assert metrics["n_examples"] == 8 and metrics["split"] == "validation"
    assert set(metrics["validation"]) == {"model", "same", "lead", "lead3", "oracle", "lexrank"}
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    predictions = data["_predictions"]
    for name in ROUGE_TYPES:
        direct = [scorer.score(one_sentence_a_line(data[i]["summary"]), one_sentence_a_line(p))[name].fmeasure
                  for i, p in predictions.items()]
        assert metrics["validation"]["model"][name] == pytest.approx(100 * sum(direct) / len(direct))
    assert metrics["significance"]["validation"]["model vs same"]["rouge2"]["p_value"] == pytest.approx(1.0)
    assert "perplexity" not in metrics["validation"]["model"]
    assert {"rouge-score", "sacrebleu"} <= set(metrics["versions"])
    assert metrics["sentence_splitter"] == "nltk.punkt"  # lead-3, the oracle, LexRank and ROUGE-Lsum's
    assert "sentence_splitter: `nltk.punkt`" in (run_dir / "report.md").read_text()
    assert metrics["machine"] == machine_description()  # the CPU, its kernel flags, the GPU
    with open(run_dir / "scores.csv", newline="") as handle:
        assert len(list(csv.DictReader(handle))) == 8 * 6
    assert "data:image/png;base64," in (run_dir / "report.html").read_text()


def test_predictions_mode_lists_missing_and_extra_ids(run_evaluate, tiny_corpus, tmp_path):
    _first_paragraph_predictions(tiny_corpus, "validation", tmp_path / "p.jsonl", drop=2, extra=["nope"])
    with pytest.raises(UsageError) as error:
        run_evaluate(f"predictions={tmp_path / 'p.jsonl'}", "split=validation")
    message = str(error.value)
    assert "2 example id(s) of the split have no prediction: 'validation-000001', 'validation-000002'" in message
    assert "1 prediction id(s) are not in the split: 'nope'" in message
    with pytest.raises(UsageError, match="exactly one of checkpoint=PATH"):
        run_evaluate()
    assert not (tmp_path / "eval" / "metrics.json").exists()


def test_a_bad_scoring_setting_exits_2_with_one_line(tiny_corpus, tmp_path, monkeypatch, capsys):
    _first_paragraph_predictions(tiny_corpus, "validation", tmp_path / "p.jsonl")
    result = run_in_process(PROG, [f"predictions={tmp_path / 'p.jsonl'}", f"data.path={tiny_corpus}",
                                   "split=validation", "bootstrap.level=2", f"hydra.run.dir={tmp_path / 'eval'}"],
                            monkeypatch, capsys)
    assert_usage_error(result.returncode, result.stderr, f"{PROG}: error:",
                       "bootstrap.level must be in (0, 1), found 2.0")


def test_an_option_hydra_refuses_exits_2_with_one_line(tiny_corpus, tmp_path):
    """The console script end to end: ``hiersum-evaluate``'s one real process of the suite."""
    result = run_cli(PROG, [f"data.path={tiny_corpus}", "bootstrap.samples=abc", f"hydra.run.dir={tmp_path / 'e'}"],
                     check=False)
    assert_usage_error(result.returncode, result.stderr, f"{PROG}: error:", "bootstrap.samples")


@pytest.mark.parametrize("option", ["baselines=[lead,lexrnk]", "bootstrap.sample=3", "bootstrap.seed=x", "decode=wide"])
def test_options_hydra_refuses_exit_2_in_one_line(option, tiny_corpus, tmp_path, monkeypatch, capsys):
    code, stderr = run_main("evaluate", [f"data.path={tiny_corpus}", option, f"hydra.run.dir={tmp_path / 'e'}"],
                            monkeypatch, capsys)
    assert_usage_error(code, stderr, f"{PROG}: error:", option.split("=")[0])
    assert not (tmp_path / "e").exists()


@pytest.mark.skipif(not SCITLDR.is_dir(), reason="shared SciTLDR-A data not present")
def test_predictions_mode_on_real_scitldr_dev(run_evaluate, tmp_path):
    records = [json.loads(line) for line in (SCITLDR / "dev.jsonl").read_text().splitlines()]
    (tmp_path / "first.jsonl").write_text("".join(
        json.dumps({"id": r["paper_id"], "summary": r["source"][0]}) + "\n" for r in records))
    dev = run_evaluate("predictions=" + str(tmp_path / "first.jsonl"), "data=scitldr", "split=dev",
                       "data.limit_eval_examples=60", *FAST, data_path=SCITLDR)["dev"]
    assert dev["oracle"]["rouge1"] > dev["lead"]["rouge1"] > 10
    assert dev["model"]["mean_over_references"]["rouge1"] < dev["model"]["rouge1"]  # several references
    assert "nrefs:var" in dev["model"]["bleu_signature"]


def test_checkpoint_mode_reports_token_scores_curves_and_attention(run_evaluate, checkpoint, tmp_path):
    metrics = run_evaluate(f"checkpoint={checkpoint}", "split=validation", "decode=greedy", "attention_examples=2",
                           *FAST)
    assert metrics["n_examples"] == 8 and metrics["split"] == "validation"
    assert set(metrics["validation"]) == {"model", "lead", "lead3", "oracle", "lexrank"}
    model = metrics["validation"]["model"]
    assert model["perplexity"] > 1.0 and 0.0 <= model["token_accuracy"] <= 100.0
    page = (tmp_path / "eval" / "report.html").read_text()
    assert "<h2>Training</h2>" in page and page.count("attention validation-") == 2


def test_average_checkpoints_gives_a_loadable_mean(trained_run, tmp_path, capsys):
    run_dir = tmp_path / "run"  # a copy (modification times kept): the averages are written beside the checkpoints
    shutil.copytree(trained_run / "checkpoints", run_dir / "checkpoints")
    first, second = sorted((run_dir / "checkpoints").glob("epoch*.ckpt"))
    average_checkpoints.main([str(first), str(second), "--output", str(tmp_path / "avg.ckpt")])
    averaged = load_network(tmp_path / "avg.ckpt").model.state_dict()
    weights = [load_network(path).model.state_dict() for path in (first, second)]
    assert any(not torch.equal(weights[0][key], weights[1][key]) for key in averaged)
    for key, tensor in averaged.items():
        if tensor.is_floating_point():
            torch.testing.assert_close(tensor, (weights[0][key] + weights[1][key]) / 2)
    # From the run directory: ModelCheckpoint's ranking (save_top_k=2 on val/rougeL).
    best = Path(json.loads((trained_run / "metrics.json").read_text())["best_checkpoint"]).name
    average_checkpoints.main([str(run_dir), "--top-k", "1", "--output", str(tmp_path / "top1.ckpt")])
    assert f"averaging the 1 best checkpoints by val/rougeL: {best}" in capsys.readouterr().out
    best_weights = weights[[first.name, second.name].index(best)]
    for key, tensor in load_network(tmp_path / "top1.ckpt").model.state_dict().items():
        torch.testing.assert_close(tensor, best_weights[key])
    average_checkpoints.main([str(run_dir), "--top-k", "3"])
    assert "averaging the 2 best checkpoints by val/rougeL" in capsys.readouterr().out
    for key, tensor in load_network(run_dir / "checkpoints" / "averaged-top2.ckpt").model.state_dict().items():
        torch.testing.assert_close(tensor, averaged[key])
    with pytest.raises(SystemExit) as exit_info:
        average_checkpoints.main([str(tmp_path / "missing.ckpt")])
    assert exit_info.value.code == 2 and "checkpoint not found" in capsys.readouterr().err
