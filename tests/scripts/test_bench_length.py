"""scripts/bench_length.py runs from a checkout on small records and reports what its docstring promises: each case's
time, peak memory and FLOPs, the flat model's limit as its one-line error, and the log-log exponents; the official
code's cases where its peer (../shared/peers/hiersumm with its venv and mirror) runs, and a one-line error where
it is asked for and does not. scripts/plot_length.py draws that report: the points it plots are the bench's own
figures. The scripts' ``main`` runs in the test's process; each case of the bench in a process of its own, as the
script starts them."""

from __future__ import annotations

import json
import sys

import pytest

from tests.helpers.scripts import load_script

pytestmark = pytest.mark.slow


TINY = ["--tokens", "8", "--steps", "3", "--target", "4", "--vocab", "50", "--repeats", "1", "--threads", "1"]


def bench_length():
    """The script as a module (its functions, constants and ``main``)."""
    return load_script("bench_length")


def run_main(module, argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    """What ``module.main(argv)`` prints on stdout: one JSON object."""
    capsys.readouterr()
    module.main(argv)
    return json.loads(capsys.readouterr().out)


def test_the_cases_their_limits_and_the_exponents_and_their_plot(tmp_path, capsys):
    # no peer harness in tmp_path: the default models are hiersum's two
    report = run_main(bench_length(), ["--paragraphs", "2", "4", *TINY, "--max-positions", "20",
                                       "--peer-dir", str(tmp_path)], capsys)
    cases = {(r["model"], r["part"], r["paragraphs"]): r for r in report["results"]}
    assert {r["model"] for r in report["results"]} == {"hierarchical", "flat"}
    assert report["settings"]["official"] is None
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

    results, image = tmp_path / "length.json", tmp_path / "length.png"  # the report as plot_length reads it
    results.write_text(json.dumps(report))
    points = run_main(load_script("plot_length"), [str(results), "--output", str(image)], capsys)
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and image.stat().st_size > 10_000
    for part in ("summarize", "train"):
        # the flat model's 32-token source is past its 20-entry table: a limit, not a point
        assert points[f"flat/{part}"] == [[16, cases[("flat", part, 2)]["seconds"],
                                           cases[("flat", part, 2)]["peak_memory_mb"]]]
        assert [p[0] for p in points[f"hierarchical/{part}"]] == [16, 32]


def test_official_asked_for_without_its_peer_is_one_line(tmp_path, monkeypatch):
    bench = bench_length()
    monkeypatch.delenv("HIERSUMM_PYTHON", raising=False)
    for argv, missing in ((["--models", "official", "--official-python", str(tmp_path / "python")], "not found"),
                          (["--models", "official", "--peer-dir", str(tmp_path)], "no peer harness")):
        with pytest.raises(SystemExit) as stop:
            bench.main(argv)
        line = str(stop.value.code)
        assert "\n" not in line and line.startswith("bench_length.py --models official: ") and missing in line
        assert "--official-python" in line and "README.md" in line and "HIERSUMM_MIRROR" in line


def test_the_official_code_runs_under_the_projects_own_python_by_default(tmp_path, monkeypatch):
    """No --official-python or HIERSUMM_PYTHON: the peer runs under this interpreter (torch and numpy from the lock
    are all the official code needs), so a fresh clone's venv runs the official cases without a venv of their own."""
    bench = bench_length()
    monkeypatch.delenv("HIERSUMM_PYTHON", raising=False)
    (tmp_path / "harness.py").touch()
    commands = []
    monkeypatch.setattr(bench.subprocess, "run", lambda command, **_: commands.append(command) or FailedCheck())
    line = bench.official_peer(bench.parse_args(["--models", "official", "--peer-dir", str(tmp_path)]))
    assert commands[0][0] == sys.executable and commands[0][-1] == "--check"
    assert line.startswith(f"the official code does not run with {sys.executable} (no mirror)")


class FailedCheck:
    returncode = 1
    stderr = "no mirror"


def test_the_official_cases_where_the_peer_runs(capsys):
    bench = bench_length()
    peer = bench.official_peer(bench.parse_args(["--models", "official"]))
    if isinstance(peer, str):
        pytest.skip(f"the official code's peer does not run here: {peer}")
    # 5001 paragraphs: past the official position table (tokens 2 keeps it small)
    report = run_main(bench, ["--models", "official", "--paragraphs", "2", "4", "5001", *TINY, "--tokens", "2",
                              "--official-python", peer["python"]], capsys)
    assert report["settings"]["official"]["official_commit"] == peer["official_commit"]
    cases = {(r["model"], r["part"], r["paragraphs"]): r for r in report["results"]}
    assert {r["model"] for r in report["results"]} == {"official"}
    for part in ("summarize", "train"):
        for paragraphs in (2, 4):
            case = cases[("official", part, paragraphs)]
            assert case["source_tokens"] == paragraphs * 2
            assert case["seconds"] > 0 and case["peak_memory_mb"] > 0 and case["gflop"] > 0
        limit = cases[("official", part, 5001)]["limit"]
        assert limit.startswith("the official encoder's position table has 5000 entries") and "\n" not in limit
        fit = report["exponents"][f"official/{part}"]
        assert fit["largest_source_tokens"] == 8 and 0 < fit["flop_exponent"] < 1.5


def test_a_case_that_dies_counting_flops_keeps_its_time_and_peak(monkeypatch):
    bench = bench_length()
    measured = json.dumps({"seconds": 1.5, "peak_memory_mb": 900.0})
    script = f"import os, signal; print({measured!r}, flush=True); os.kill(os.getpid(), signal.SIGKILL)"
    killed_after_measuring = [sys.executable, "-c", script]
    monkeypatch.setattr(bench, "child_command", lambda args, case: killed_after_measuring)
    args = bench.parse_args(["--models", "hierarchical", "--parts", "train", "--paragraphs", "2", "4"])
    report = bench.run_cases(args)
    assert [(r["seconds"], r["peak_memory_mb"], r["gflop"]) for r in report["results"]] == [(1.5, 900.0, None)] * 2
    assert all(r["flop_count_failed"] == "exit status -9" for r in report["results"])
    assert report["exponents"]["hierarchical/train"]["time_exponent"] == 0.0
    assert report["exponents"]["hierarchical/train"]["flop_exponent"] is None


def test_a_flat_size_past_the_table_is_its_limit_without_a_process(monkeypatch):
    """The flat model's limit is known from the sizes: its case starts no process, and says the encoder's own
    error (tests/model/test_long_positions.py checks that the encoder raises it)."""
    bench = bench_length()
    started = []

    def child_command(args, case: str) -> list[str]:
        started.append(case)
        measured = [{"seconds": 0.5, "peak_memory_mb": 300.0}, {"gflop": 0.01}]  # the two lines a case prints
        return [sys.executable, "-c", "".join(f"print({json.dumps(line)!r});" for line in measured)]

    monkeypatch.setattr(bench, "child_command", child_command)
    args = bench.parse_args(["--models", "flat", "--paragraphs", "2", "4", "8", "--tokens", "8",
                             "--max-positions", "20"])
    report = bench.run_cases(args)
    assert started == ["flat:summarize:2", "flat:train:2"]  # 16 tokens within the table of 20; 32 past it
    for part in ("summarize", "train"):
        ran, limited = (r for r in report["results"] if r["part"] == part)
        assert (ran["paragraphs"], ran["seconds"]) == (2, 0.5) and "limit" not in ran
        assert (limited["paragraphs"], "seconds" in limited) == (4, False)  # and 8 not tried
        assert limited["limit"] == bench.flat_source_limit(32, 20)
        assert limited["limit"].startswith("the flat encoder reads at most model.max_positions=20 tokens; found a "
                                           "source of L=32")


def test_the_flop_count_past_the_memory_limit_is_none():
    def out_of_memory() -> None:
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory")

    bench = bench_length()
    assert bench.count_gflop(out_of_memory) is None
    assert bench.count_gflop(lambda: None) == 0.0
