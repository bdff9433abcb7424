"""scripts/bench_decode.py runs on a tiny model and reports what its docstring promises. Its ``main`` runs in the
test's process; each case in a process of its own, as the script starts them."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from tests.helpers.scripts import load_script

TINY = ["--models", "tiny", "--batch", "2", "--paragraphs", "3", "--tokens", "5", "--vocab", "40", "--beam", "2",
        "--steps", "4", "--repeats", "1", "--threads", "1"]
TIMES = {"seconds_best", "seconds_median", "tokens_per_s", "beam_tokens_per_s", "examples_per_s"}


def bench(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    """What the script prints with ``args``: one JSON object."""
    capsys.readouterr()
    load_script("bench_decode").main(list(args))
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_every_case_reports_tokens_per_second_and_the_cache_speedup(capsys):
    report = bench(capsys, *TINY)
    assert {"settings", "results", "cache_speedup"} <= set(report)
    assert report["settings"]["precision"] == "fp32" and report["settings"]["compile"] is False
    cases = {(r["search"], r["cache"]) for r in report["results"]}
    assert cases == {("greedy", True), ("greedy", False), ("beam", True), ("beam", False)}
    for result in report["results"]:
        assert TIMES | {"peak_memory_mb", "precision"} <= set(result)
        # seconds are rounded to 0.1 ms in the report: a few % of a tiny model's call
        assert result["tokens_per_s"] == pytest.approx(2 * 4 / result["seconds_best"], rel=0.05)
        assert result["seconds_best"] <= result["seconds_median"]
        assert result["gflop_per_s"] == pytest.approx(result["gflop"] / result["seconds_best"], rel=0.05, abs=0.01)
        assert 0 < result["mfu"] < 1
    assert set(report["cache_speedup"]) == {"tiny/greedy", "tiny/beam"}
    work = {(r["search"], r["cache"]): r["gflop"] for r in report["results"]}
    for search in ("greedy", "beam"):  # without the cache every step runs the decoder over the whole prefix again
        assert work[search, False] > work[search, True] > 0


@pytest.mark.slow
def test_alternating_pairs_report_each_pair_and_the_median_ratio(capsys):
    """``--against`` with a command printing a bare {"tokens_per_s": x}: ratios ours / x for every case."""
    against = f"{shlex.quote(sys.executable)} -c 'print(\"{{\\\"tokens_per_s\\\": 2.0}}\")'"
    report = bench(capsys, *TINY, "--no-uncached", "--against", against, "--pairs", "1")
    assert {"settings", "against", "pairs", "median_ratio"} <= set(report)
    assert len(report["pairs"]) == 1
    assert set(report["median_ratio"]) == {"tiny/greedy/cache", "tiny/beam/cache"}
    for pair in report["pairs"]:
        assert pair["theirs"] == {"*": 2.0}
        for name, ratio in pair["ratio"].items():
            assert ratio == pytest.approx(pair["ours"][name] / 2.0, rel=0.01)


def test_against_a_report_of_this_script_matches_cases_by_name():
    bench_decode = load_script("bench_decode")
    report = {"results": [
        {"model": "tiny", "search": "beam", "cache": True, "tokens_per_s": 10.0, "compiled_tokens_per_s": 12.0},
        {"model": "tiny", "search": "beam", "cache": False, "tokens_per_s": 3.0},
    ]}
    assert bench_decode.case_rates(report) == {"tiny/beam/cache": 10.0, "tiny/beam/cache/compiled": 12.0,
                                              "tiny/beam/nocache": 3.0}
    assert bench_decode.strip_options(["--models", "x", "--against", "cmd", "--pairs=3", "--steps", "4"],
                                      ("--against", "--pairs")) == ["--models", "x", "--steps", "4"]


@pytest.mark.slow
def test_compile_times_the_compiled_step_beside_eager_in_bf16():
    """One case in process (compiling twice, one process per case, would be slow on CPU)."""
    bench_decode = load_script("bench_decode")
    args = bench_decode.parse_args([*TINY, "--compile", "--precision", "bf16"])
    result = bench_decode.run_case(args, "tiny", "beam", True)
    assert result["precision"] == "bf16"
    assert {f"compiled_{key}" for key in TIMES} | {"compiled_speedup", "compile_seconds"} <= set(result)
    assert result["compiled_speedup"] == pytest.approx(result["seconds_best"] / result["compiled_seconds_best"],
                                                       rel=0.1)  # from unrounded seconds
    assert result["compile_seconds"] > 0


@pytest.mark.slow
def test_a_compile_mode_is_passed_to_the_step_and_its_tokens_are_compared_with_eager():
    bench_decode = load_script("bench_decode")
    args = bench_decode.parse_args([*TINY, "--compile", "--compile-mode", "default"])
    result = bench_decode.run_case(args, "tiny", "greedy", True)
    assert result["compiled_same_tokens"] is True  # fp32: the compiled step decodes eager's tokens
    assert bench_decode.parse_args([*TINY]).compile_mode is None  # the model's own choice by default
