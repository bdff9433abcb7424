"""scripts/plot_length.py draws what scripts/bench_length.py measured: a PNG of both panels, and the points it
plotted, which are the bench's own figures (a run of the bench plotted: tests/scripts/test_bench_length.py). Its
``main`` runs in the test's process."""

from __future__ import annotations

import json

import pytest

from tests.helpers.scripts import load_script

pytestmark = pytest.mark.slow


def test_no_measured_case_is_one_line(tmp_path):
    results = tmp_path / "length.json"
    results.write_text(json.dumps({"results": [{"model": "flat", "part": "train", "source_tokens": 10,
                                                "limit": "the flat encoder reads at most ..."}]}))
    with pytest.raises(SystemExit) as stop:  # a message: Python prints it on stderr and exits with status 1
        load_script("plot_length").main([str(results), "--output", str(tmp_path / "x.png")])
    assert stop.value.code == f"{results}: no measured case (every case hit a limit or failed)"
    assert not (tmp_path / "x.png").exists()


def test_training_with_activation_checkpointing_is_a_line_of_its_own(tmp_path, capsys):
    def report(recompute: bool, seconds: float) -> dict:
        return {"settings": {"activation_checkpointing": recompute},
                "results": [{"model": "hierarchical", "part": "train", "source_tokens": tokens,
                             "seconds": seconds * tokens, "peak_memory_mb": 500.0} for tokens in (100, 1000)]}

    plain, recomputed = tmp_path / "plain.json", tmp_path / "recomputed.json"
    plain.write_text(json.dumps(report(False, 0.001)))
    recomputed.write_text(json.dumps(report(True, 0.002)))
    load_script("plot_length").main([str(plain), str(recomputed), "--output", str(tmp_path / "x.png")])
    points = json.loads(capsys.readouterr().out)
    assert points["hierarchical/train"] == [[100, 0.1, 500.0], [1000, 1.0, 500.0]]
    assert points["hierarchical/train (activation checkpointing)"] == [[100, 0.2, 500.0], [1000, 2.0, 500.0]]
