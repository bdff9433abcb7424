"""scripts/bench_length.py runs from a checkout on small records and reports what its docstring promises: each case's
time, peak memory and FLOPs, the flat model's limit as its one-line error, and the log-log exponents."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers.paths import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "bench_length.py"

pytestmark = pytest.mark.slow


def test_the_cases_their_limits_and_the_exponents():
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--paragraphs", "2", "4", "--tokens", "8", "--steps", "3", "--target", "4",
         "--vocab", "50", "--repeats", "1", "--threads", "1", "--max-positions", "20"],
        capture_output=True, text=True, check=True, cwd=PROJECT_ROOT)
    report = json.loads(out.stdout)
    cases = {(r["model"], r["part"], r["paragraphs"]): r for r in report["results"]}
    for part in ("summarize", "train"):
        for paragraphs in (2, 4):
            case = cases[("hierarchical", part, paragraphs)]
            assert case["source_tokens"] == paragraphs * 8
            assert case["seconds"] > 0 and case["peak_memory_mb"] > 0 and case["gflop"] > 0
        assert cases[("flat", part, 2)]["gflop"] > 0  # 16 tokens: within the table of 20
        assert cases[("flat", part, 4)]["limit"].startswith("the flat encoder reads at most model.max_positions=20")
        fit = report["exponents"][f"hierarchical/{part}"]
        assert fit["largest_source_tokens"] == 32 and 0 < fit["flop_exponent"] < 1.5
        assert report["exponents"][f"flat/{part}"]["flop_exponent"] is None  # one size ran
