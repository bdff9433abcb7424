"""scripts/bench_summarize.py on the session's tiny checkpoint: ``hiersum summarize`` of N records per case, every
summary written and forced to ``--steps`` tokens, the rates consistent with the time; a bad case refused in one
line; ``--time-limit`` skips the cases it leaves no time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import PROJECT_ROOT
from tests.helpers.scripts import load_script

SCRIPTS = PROJECT_ROOT / "scripts"


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPTS / "bench_summarize.py"), *args], capture_output=True,
                          text=True, cwd=PROJECT_ROOT)


def test_each_case_summarizes_every_record_and_its_rates_follow_from_its_time(checkpoint: Path):
    done = bench("--checkpoint", str(checkpoint), "--records", "10", "--steps", "3", "--beam", "2",
                 "--cases", "2048:off", "8192:off")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["settings"] == {"records": 10, "device": "cpu", "precision": "32", "beam": 2, "steps": 3}
    assert [(r["batch_tokens"], r["compile_step"]) for r in report["results"]] == [(2048, False), (8192, False)]
    assert report["skipped"] == []
    for result in report["results"]:
        assert result["model"] == "given" and result["records"] == 10
        assert result["records_per_s"] == pytest.approx(10 / result["seconds"], abs=0.06)
        assert result["tokens_per_s"] == pytest.approx(30 / result["seconds"], abs=0.06)
        assert result["startup_seconds"] > 0 and result["peak_memory_mb"] > 100
        net = result["seconds"] - result["startup_seconds"]
        assert result["net_records_per_s"] == (pytest.approx(10 / net, rel=0.02) if net > 0 else None)
    # one start-up run per compile setting: the two eager cases share it
    assert len({r["startup_seconds"] for r in report["results"]}) == 1


def test_a_time_limit_skips_the_cases_it_leaves_no_time_and_a_bad_case_is_refused(checkpoint: Path):
    done = bench("--checkpoint", str(checkpoint), "--records", "4", "--steps", "2", "--beam", "1",
                 "--cases", "4096:off", "4096:on", "--time-limit", "0")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["results"] == []
    assert report["skipped"] == [{"model": "given", "batch_tokens": 4096, "compile_step": False},
                                 {"model": "given", "batch_tokens": 4096, "compile_step": True}]
    refused = bench("--cases", "4096:maybe")
    assert refused.returncode == 2
    assert "a case is BUDGET:off or BUDGET:on (e.g. 8192:off), got '4096:maybe'" in refused.stderr


def test_the_records_are_the_sample_test_split_repeated_with_ids_of_their_own(tmp_path: Path):
    bench_summarize = load_script("bench_summarize")
    bench_summarize.write_records(tmp_path / "records.jsonl", 450)
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    sample = [json.loads(line) for line in bench_summarize.SAMPLE_TEST.read_text().splitlines()]
    assert len(records) == 450 and len({r["id"] for r in records}) == 450
    assert [r["documents"] for r in records[:len(sample)]] == [r["documents"] for r in sample]
    assert records[len(sample)]["documents"] == sample[0]["documents"]
