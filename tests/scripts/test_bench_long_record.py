"""scripts/bench_long_record.py end to end on a small record: it trains its checkpoint, writes a record of P
paragraphs, and both front ends (``hiersum summarize`` and the Python call) summarize all of it, each measured."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers.cli import cli_env
from tests.helpers.paths import PROJECT_ROOT

pytestmark = pytest.mark.slow


def test_both_front_ends_summarize_the_record_and_are_measured():
    out = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "scripts" / "bench_long_record.py"), "--model", "tiny",
         "--paragraphs", "30", "--tokens", "12", "--beam", "2", "--steps", "4"],
        capture_output=True, text=True, check=True, cwd=PROJECT_ROOT,
        env=cli_env())  # one thread: its training measures no CPU roof of another thread count (20 s of the CPU)
    report = json.loads(out.stdout)
    assert report["source_tokens"] == 360 and report["checkpoint"].startswith("trained here")
    for front in ("cli", "python"):
        assert report[front]["seconds"] > 0 and report[front]["peak_memory_mb"] > 100
        assert 0 < report[front]["summary_words"] <= 4
