"""Tests of hiersum.evaluation.report: files written, their content, atomic writes."""

import json
from pathlib import Path

import pytest

from hiersum.evaluation.report import (
    build_report,
    library_versions,
    render_markdown,
    write_json_atomic,
    write_predictions,
    write_report,
)

METRICS = {
    "test": {
        "model": {
            "rouge1": 41.234,
            "rouge2": 18.5,
            "rougeL": 35.0,
            "rougeLsum": 38.456,
            "bleu": 12.3456,
            "bleu_signature": "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0",
            "perplexity": 7.891,
            "n_examples": 2,
        },
        "lead": {
            "rouge1": 30.0,
            "rouge2": 9.999,
            "rougeL": 25.5,
            "rougeLsum": 27.0,
            "bleu": 5.0,
            "bleu_signature": "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0",
        },
    },
    "n_examples": 2,
    "checkpoint": "outputs/run/checkpoints/best.ckpt",
    "split": "test",
    "decode": {"beam_size": 5, "max_length": 100},
}
PREDICTIONS = [
    {"id": "ex-0", "summary": "the model summary | with a pipe", "reference": "the reference"},
    {"id": "ex-1", "summary": "second summary", "reference": ["ref a", "ref b"]},
    {"id": "ex-2", "summary": "third", "reference": "third ref"},
    {"id": "ex-3", "summary": "fourth not shown", "reference": "fourth ref"},
]


def test_write_report_files(tmp_path):
    paths = write_report(tmp_path / "run", METRICS, PREDICTIONS)
    assert paths == {
        "metrics": tmp_path / "run" / "metrics.json",
        "report": tmp_path / "run" / "report.md",
        "html": tmp_path / "run" / "report.html",
        "predictions": tmp_path / "run" / "predictions.jsonl",
    }
    assert json.loads(paths["metrics"].read_text(encoding="utf-8")) == METRICS

    lines = paths["predictions"].read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == PREDICTIONS

    report = paths["report"].read_text(encoding="utf-8")
    assert "| model | 41.23 | 18.50 | 35.00 | 38.46 | 12.35 |  | 7.89 |  |" in report
    assert "| lead | 30.00 | 10.00 | 25.50 | 27.00 | 5.00 |  |  |  |" in report
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "metrics.json",
        "predictions.jsonl",
        "report.html",
        "report.md",
    ]


def test_write_report_without_predictions(tmp_path):
    paths = write_report(tmp_path, METRICS)
    assert set(paths) == {"metrics", "report", "html"}
    assert not (tmp_path / "predictions.jsonl").exists()
    assert "## Examples" not in paths["report"].read_text(encoding="utf-8")


def test_render_markdown_content():
    report = render_markdown(build_report(METRICS, PREDICTIONS))
    assert report.startswith("# ")
    assert "## Split: test" in report
    header = "| System | ROUGE-1 | ROUGE-2 | ROUGE-L | ROUGE-Lsum | BLEU | chrF | Perplexity | Token acc. |"
    assert header in report
    assert "nrefs:1|case:mixed" in report
    assert "outputs/run/checkpoints/best.ckpt" in report
    assert '"beam_size": 5' in report
    for package, version in library_versions().items():
        assert f"- {package}: {version}" in report
    # The first three examples, with their references, and no more.
    assert "> the model summary | with a pipe" in report
    assert "**Reference 2**" in report and "> ref b" in report
    assert "> third ref" in report
    assert "fourth" not in report


def test_render_markdown_other_split_and_recorded_versions():
    metrics = {
        "validation": {"model": {"rouge1": 1.0, "perplexity": 3.14159}},
        "versions": {"sacrebleu": "9.9.9"},
    }
    report = render_markdown(build_report(metrics))
    assert "## Split: validation" in report
    assert "| model | 1.00 |  |  |  |  |  | 3.14 |  |" in report
    assert "- sacrebleu: 9.9.9" in report
    assert "## Run" not in report and "## Machine" not in report


def test_the_report_names_the_machine_recorded():
    metrics = {"validation": {"model": {"rouge1": 1.0}},
               "machine": {"cpu": "AMD EPYC 7B13", "cpu_flags": ["avx2", "fma"], "gpu": None}}
    report = render_markdown(build_report(metrics))
    assert '## Machine' in report and "- cpu: AMD EPYC 7B13" in report and '- cpu_flags: ["avx2", "fma"]' in report
    assert "## Run" not in report  # the machine is not a run fact


def test_library_versions():
    versions = library_versions()
    assert {"rouge-score", "sacrebleu", "torch"} <= set(versions)
    assert all(isinstance(v, str) and v for v in versions.values())


def test_write_json_atomic_replaces_and_leaves_no_tmp(tmp_path):
    path = tmp_path / "sub" / "m.json"
    write_json_atomic(path, {"a": 1})
    write_json_atomic(path, {"b": Path("x/y"), "c": [1.5, None]})
    assert json.loads(path.read_text(encoding="utf-8")) == {"b": "x/y", "c": [1.5, None]}
    assert [p.name for p in path.parent.iterdir()] == ["m.json"]


def test_failed_atomic_write_keeps_old_file_and_no_tmp(tmp_path):
    path = tmp_path / "m.json"
    write_json_atomic(path, {"a": 1})
    with pytest.raises(TypeError, match="cannot write object"):
        write_json_atomic(path, {"a": object()})
    assert json.loads(path.read_text(encoding="utf-8")) == {"a": 1}

    def records():
        yield {"id": 1}
        raise RuntimeError("generator failed")

    with pytest.raises(RuntimeError):
        write_predictions(tmp_path / "p.jsonl", records())
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def test_write_predictions_unicode(tmp_path):
    path = tmp_path / "p.jsonl"
    write_predictions(path, [{"id": "é", "summary": "naïve\nline", "reference": "ü"}])
    text = path.read_text(encoding="utf-8")
    assert text.count("\n") == 1
    assert json.loads(text) == {"id": "é", "summary": "naïve\nline", "reference": "ü"}


def _scored_metrics():
    from hiersum.data.schema import Example
    from hiersum.evaluation.scoring import BootstrapConfig, ScoringConfig, score_split

    examples = [Example(id=f"e{i}", title="", documents=[[f"The cat sat on mat {i}. Storms closed airports."]],
                        references=[f"A cat sat on mat {i}.", "Cats sit."]) for i in range(6)]
    outputs = [f"the cat sat on mat {i}" for i in range(6)]
    scored = score_split(examples, {"model": outputs, "other": ["storms"] * 6},
                         ScoringConfig(baselines=["lead"], bootstrap=BootstrapConfig(samples=100)),
                         compare=[("model", "other")])
    metrics = {"dev": scored.systems, "n_examples": 6, "significance": {"dev": scored.comparisons}}
    return metrics, scored.rows


def test_html_report_is_self_contained_with_plots_and_scores_csv(tmp_path):
    import base64
    import csv
    import re

    metrics, rows = _scored_metrics()
    run = tmp_path / "run"
    (run / "csv").mkdir(parents=True)
    (run / "csv" / "metrics.csv").write_text(
        "epoch,lr-Adam,step,train/loss,val/loss,val/perplexity\n0,0.1,0,5.0,,\n0,0.1,1,4.0,,\n0,,1,,4.5,90.0\n"
        "1,0.1,2,3.0,,\n1,,3,,3.5,33.0\n")
    paths = write_report(run, metrics, PREDICTIONS, rows=rows)
    page = paths["html"].read_text(encoding="utf-8")
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    # Score bars, length histogram, training curves: all embedded PNGs, no external resource.
    assert len(images) == 3
    assert all(base64.b64decode(image).startswith(b"\x89PNG") for image in images)
    assert "<h2>Training</h2>" in page and "src=\"http" not in page
    assert "Paired bootstrap tests" in page and "dev: model vs other" in page
    assert "95% bootstrap intervals" in page and "&lt;" not in page.split("<body>")[0]

    with open(paths["scores"], newline="", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == 3 * 6 and {row["system"] for row in table} == {"model", "other", "lead"}
    model_rows = [row for row in table if row["system"] == "model"]
    assert sum(float(row["rouge1"]) for row in model_rows) / 6 == pytest.approx(metrics["dev"]["model"]["rouge1"])

    report = paths["report"].read_text(encoding="utf-8")
    assert "## Paired bootstrap tests" in report and "### dev: model vs other" in report
    assert "| ROUGE-1 | +" in report  # the model beats "storms" on ROUGE-1
    assert "chrF signature (sacrebleu):" in report
    low, high = metrics["dev"]["model"]["ci"]["rouge1"]
    assert f"[{low:.2f}, {high:.2f}]" in report


def test_attention_heatmaps_are_embedded(tmp_path):
    import numpy as np

    from hiersum.evaluation.report import Attention, render_html

    rng = np.random.default_rng(0)
    pooling = rng.dirichlet(np.ones(5), size=(3, 2))  # (P=3, H=2, T=5)
    inter = rng.dirichlet(np.ones(3), size=(2, 3))  # (H=2, P=3, P=3)
    page = render_html(build_report(METRICS, attention=[Attention("ex-0", pooling, inter)]))
    assert "Attention (last inter-paragraph layer)" in page
    assert page.count("data:image/png;base64,") == 2  # score bars + one heatmap
