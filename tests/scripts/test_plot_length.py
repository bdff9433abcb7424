"""scripts/plot_length.py draws what scripts/bench_length.py measured: a PNG of both panels, and the points it
plotted, which are the bench's own figures."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers.paths import PROJECT_ROOT

pytestmark = pytest.mark.slow


def test_the_plot_holds_the_benchs_points(tmp_path):
    bench = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "scripts" / "bench_length.py"), "--models", "hierarchical", "flat",
         "--parts", "summarize", "--paragraphs", "2", "4", "--tokens", "8", "--steps", "3", "--vocab", "50",
         "--repeats", "1", "--threads", "1", "--max-positions", "20"],
        capture_output=True, text=True, check=True, cwd=PROJECT_ROOT)
    results = tmp_path / "length.json"
    results.write_text(bench.stdout)
    image = tmp_path / "length.png"
    plotted = subprocess.run([sys.executable, str(PROJECT_ROOT / "scripts" / "plot_length.py"), str(results),
                              "--output", str(image)], capture_output=True, text=True, check=True, cwd=PROJECT_ROOT)
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and image.stat().st_size > 10_000
    points = json.loads(plotted.stdout)
    measured = json.loads(bench.stdout)["results"]
    # the flat model's 32-token source is past its 20-entry table: a limit, not a point
    assert points["flat/summarize"] == [[16, *next([r["seconds"], r["peak_memory_mb"]] for r in measured
                                                   if r["model"] == "flat" and r["paragraphs"] == 2)]]
    assert [p[0] for p in points["hierarchical/summarize"]] == [16, 32]


def test_no_measured_case_is_one_line(tmp_path):
    results = tmp_path / "length.json"
    results.write_text(json.dumps({"results": [{"model": "flat", "part": "train", "source_tokens": 10,
                                                "limit": "the flat encoder reads at most ..."}]}))
    run = subprocess.run([sys.executable, str(PROJECT_ROOT / "scripts" / "plot_length.py"), str(results),
                          "--output", str(tmp_path / "x.png")], capture_output=True, text=True, cwd=PROJECT_ROOT)
    assert run.returncode == 1
    assert run.stderr.strip() == f"{results}: no measured case (every case hit a limit or failed)"
