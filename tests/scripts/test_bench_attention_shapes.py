"""scripts/bench_attention_shapes.py on a CPU, a few small shapes: both choices timed, first calls and calls again,
in one JSON object (on a CPU both are PyTorch's own call; the GPU figures are docs/benchmarks.md's)."""

from __future__ import annotations

import json

from tests.helpers.scripts import load_script


def test_both_choices_are_timed_on_new_shapes_and_again(capsys):
    bench = load_script("bench_attention_shapes")
    report = bench.main(["--device", "cpu", "--shapes", "3", "--rounds", "2", "--max-rows", "6", "--max-width", "9",
                         "--heads", "2", "--head-dim", "4"])
    assert json.loads(capsys.readouterr().out) == report
    assert report["settings"]["precision"] == "fp32" and report["settings"]["cudnn"] is None
    assert set(report["results"]) == {"pytorch", "hiersum"}
    for result in report["results"].values():
        for calls in ("first", "again"):
            assert 0 < result[calls]["median_ms"] <= result[calls]["total_ms"]
        assert result["first_over_again"] > 0
