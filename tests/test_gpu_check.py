"""``scripts/gpu_check.py`` (``make gpu-check``) where there is no GPU: it refuses in one line with a non-zero
exit; its parts are selected with ``--parts`` (an unknown one: exit 2); each part runs, fails, times out or is
skipped as its commands and data say; the summary is one JSON object. The GPU parts themselves run only on a
CUDA machine."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from tests.helpers.paths import PROJECT_ROOT
from tests.helpers.scripts import load_script

SCRIPT = PROJECT_ROOT / "scripts" / "gpu_check.py"
gpu_check = load_script("gpu_check")


def run_script(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=PROJECT_ROOT, capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.mark.slow  # runs the check's processes
@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_without_a_gpu_it_fails_in_one_line_and_runs_nothing(tmp_path):
    result = run_script("--out", str(tmp_path / "out"))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr
    assert "no CUDA GPU" in result.stderr and "torch.cuda.is_available() is False" in result.stderr
    assert not (tmp_path / "out").exists()


def test_an_unknown_part_is_refused_in_one_line_with_exit_2():
    result = run_script("--parts", "tests,bench_everything")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == ("gpu_check: --parts: unknown part bench_everything; expected some of "
                                     + ", ".join(gpu_check.PART_NAMES))


def test_the_tests_part_leaves_out_only_files_that_exist_and_use_no_gpu():
    """pytest ignores an ``--ignore`` of a path that is not there: a renamed file would run again unnoticed."""
    [command] = gpu_check.PARTS[0].commands(gpu_check.Context("python", Path("d"), Path("m"), Path("o")))
    ignored = [argument.removeprefix("--ignore=") for argument in command if argument.startswith("--ignore=")]
    cpu_only = len(gpu_check.CPU_ONLY_TESTS)  # then, where a package is missing, its files (the test below)
    assert ignored[:cpu_only] == list(gpu_check.CPU_ONLY_TESTS)
    assert set(ignored[cpu_only:]) <= set(gpu_check.TESTS_NEEDING)
    assert all((PROJECT_ROOT / path).is_file() for path in ignored)
    assert 1 <= gpu_check.TEST_WORKERS <= 14 and command[-1] == "tests"


def test_the_tests_part_leaves_out_a_file_whose_package_is_missing_and_says_so(monkeypatch):
    """The lent GPU machines lack schemathesis: its file is left out there (and named), run where it is installed."""
    context = gpu_check.Context("python", Path("d"), Path("m"), Path("o"))
    lacking = set(gpu_check.TESTS_NEEDING.values())
    real_find_spec = gpu_check.importlib.util.find_spec
    monkeypatch.setattr(gpu_check.importlib.util, "find_spec",
                        lambda name, *args: None if name in lacking else real_find_spec(name, *args))
    [command] = gpu_check.PARTS[0].commands(context)
    ignored = [argument.removeprefix("--ignore=") for argument in command if argument.startswith("--ignore=")]
    assert ignored == [*gpu_check.CPU_ONLY_TESTS, *gpu_check.TESTS_NEEDING]
    assert all((PROJECT_ROOT / path).is_file() for path in gpu_check.TESTS_NEEDING)
    figures = gpu_check.PARTS[0].figures(context, ["=== 2 failed, 510 passed, 12 skipped in 300.1s ==="])
    assert figures == {"failed": 2, "passed": 510, "skipped": 12,
                       "left_out_for_a_missing_package": list(gpu_check.TESTS_NEEDING)}


def test_parts_are_selected_by_name_in_the_order_named():
    assert [p.name for p in gpu_check.select_parts(None)] == list(gpu_check.PART_NAMES)
    picked = gpu_check.select_parts("scitldr_minilm, tests,scitldr_minilm")
    assert [p.name for p in picked] == ["scitldr_minilm", "tests"]
    with pytest.raises(gpu_check.UnknownPart, match="unknown part nope"):
        gpu_check.select_parts("tests,nope")


def test_list_names_every_part_and_needs_no_gpu():
    result = run_script("--list")
    assert result.returncode == 0
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == list(gpu_check.PART_NAMES)


def context(tmp_path: Path, timeout: int = 60):
    return gpu_check.Context(sys.executable, tmp_path / "data", tmp_path / "minilm", tmp_path, timeout)


def python(code: str):
    return lambda c: [[c.python, "-c", code]]


def test_a_part_that_succeeds_gives_its_figures_and_keeps_its_log(tmp_path):
    part = gpu_check.Part("demo", "", python('print("warming"); print({"x": 1}.__repr__().replace("\'", \'"\'))'),
                          figures=lambda c, outputs: gpu_check.last_json(outputs[-1]))
    outcome = gpu_check.run_part(part, context(tmp_path))
    assert (outcome.status, outcome.figures, outcome.reason) == ("ok", {"x": 1}, None)
    assert outcome.seconds > 0 and "warming" in (tmp_path / "demo.log").read_text()


def test_a_failing_a_slow_and_a_part_without_its_data(tmp_path):
    failing = gpu_check.Part("failing", "", python("import sys; sys.exit(3)"))
    assert gpu_check.run_part(failing, context(tmp_path)).reason.startswith("exit status 3")
    slow = gpu_check.Part("slow", "", python("import time; print('started', flush=True); time.sleep(30)"))
    outcome = gpu_check.run_part(slow, context(tmp_path, timeout=5))  # 5 s: a Python starts within it under load
    assert (outcome.status, outcome.reason) == ("failed", "timed out after 5 s")
    assert "started" in (tmp_path / "slow.log").read_text()  # what it printed before the timeout is kept
    data = gpu_check.PARTS[gpu_check.PART_NAMES.index("scitldr_scratch")]
    outcome = gpu_check.run_part(data, context(tmp_path))
    assert (outcome.status, outcome.reason) == ("skipped", f"absent: {tmp_path / 'data' / 'scitldr-a'}")
    assert not (tmp_path / "scitldr_scratch.log").exists()  # nothing ran


def test_the_time_limit_caps_a_part_and_skips_those_it_leaves_no_time(tmp_path, monkeypatch):
    capped = gpu_check.Part("capped", "", python("import time; time.sleep(30)"), timeout=1)
    outcome = gpu_check.run_part(capped, context(tmp_path))
    assert (outcome.status, outcome.reason) == ("failed", "timed out after 1 s")
    monkeypatch.setattr(gpu_check, "MIN_PART_SECONDS", 2)
    slow = gpu_check.Part("slow", "", python("import time; time.sleep(60)"))
    outcome = gpu_check.run_part(slow, replace(context(tmp_path), deadline=time.monotonic() + 4))
    # what is left of the 4 s when the part starts, rounded: 3 after a stall of over half a second on a loaded machine
    assert outcome.status == "failed" and re.fullmatch(r"timed out after [34] s", outcome.reason), outcome.reason
    assert outcome.seconds < 50  # stopped at the deadline: the part itself sleeps 60 s
    late = gpu_check.Part("late", "", python("pass"))
    outcome = gpu_check.run_part(late, replace(context(tmp_path), deadline=time.monotonic() + 1))
    assert outcome.status == "skipped" and re.fullmatch(r"the check's --time-limit leaves [01] s", outcome.reason)
    assert not (tmp_path / "late.log").exists()  # nothing ran


def test_a_timed_out_part_takes_the_processes_its_command_started_with_it(tmp_path):
    marker = tmp_path / "child.pid"
    code = ("import subprocess, sys, time; child = subprocess.Popen([sys.executable, '-c', 'import time; "
            f"time.sleep(60)']); open({str(marker)!r}, 'w').write(str(child.pid)); time.sleep(60)")
    outcome = gpu_check.run_part(gpu_check.Part("spawns", "", python(code)), context(tmp_path, timeout=5))
    assert outcome.reason == "timed out after 5 s"  # 5 s: two Pythons start and the marker is written under load
    child = int(marker.read_text())
    for _ in range(300):  # 30 s for the kernel to end it on a loaded machine
        if not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the part's grandchild {child} outlived its timeout")


def test_the_summary_is_one_json_object_that_is_ok_only_without_a_failure():
    outcomes = {"tests": gpu_check.Outcome("ok", 12.34, {"passed": 3}),
                "bench_decode": gpu_check.Outcome("skipped", reason="absent: x")}
    report = gpu_check.summary("NVIDIA H100 80GB HBM3", outcomes)
    assert json.loads(json.dumps(report)) == {
        "device": "NVIDIA H100 80GB HBM3", "ok": True, "counts": {"ok": 1, "failed": 0, "skipped": 1},
        "parts": {"tests": {"status": "ok", "seconds": 12.3, "figures": {"passed": 3}},
                  "bench_decode": {"status": "skipped", "seconds": 0.0, "figures": {}, "reason": "absent: x"}}}
    outcomes["paper_bf16"] = gpu_check.Outcome("failed", 1.0, reason="exit status 1")
    assert gpu_check.summary("x", outcomes)["ok"] is False


def test_pytest_and_benchmark_figures_are_read_from_their_output():
    summary = "....\n= 2 failed, 510 passed, 12 skipped, 3 warnings in 301.25s (0:05:01) =\n"
    assert gpu_check._pytest_figures(None, [summary]) == {"failed": 2, "passed": 510, "skipped": 12, "warnings": 3}
    result = {"model": "small", "case": "multinews", "speedup": 1.3, "graphs": 5, "first_step_seconds": 20.0,
              "eager": {"mfu": 0.2, "src_tokens_per_s": 1000.0}, "compiled": {"mfu": 0.26, "src_tokens_per_s": 1300.0}}
    output = "progress line\n" + json.dumps({"settings": {}, "results": [result]}, indent=2)
    assert gpu_check._bench_train_figures(None, [output]) == {"small/multinews": {
        "speedup": 1.3, "graphs": 5, "first_step_seconds": 20.0, "eager_mfu": 0.2, "eager_src_tokens_per_s": 1000.0,
        "compiled_mfu": 0.26, "compiled_src_tokens_per_s": 1300.0}}


@pytest.mark.slow  # bench_decode --help, twice: ~10 s of imports
def test_bench_decode_is_called_on_cuda_with_the_flags_it_has(tmp_path):
    commands = gpu_check._bench_decode_commands(context(tmp_path))
    help_text = subprocess.run([sys.executable, str(PROJECT_ROOT / "scripts" / "bench_decode.py"), "--help"],
                               capture_output=True, text=True, cwd=PROJECT_ROOT).stdout
    assert all(command[command.index("--device") + 1] == "cuda" for command in commands)
    assert len(commands) == (1 + ("--precision" in help_text)) * (1 + ("--compile" in help_text))


@pytest.mark.slow  # a dry run
def test_the_dry_run_part_reads_the_estimate_a_dry_run_writes(tiny_cfg, device, tmp_path):
    from hiersum.commands.train import train

    dry_run = train(tiny_cfg("dry_run=true", output_dir=tmp_path / "dry_run_paper"))["dry_run"]
    figures = gpu_check._dry_run_figures(context(tmp_path), [])
    mixed = next(step for step in dry_run["steps"] if step["precision"] == "bf16-mixed")
    assert figures["estimate_mib"] == round(mixed["total"] / 2**20, 1) > 0 and figures["batch"]["B"] >= 1
    if device.type == "cpu":  # nothing measured without a GPU
        assert dry_run["measured"] is None and figures["measured_mib"] is figures["measured_over_estimate"] is None
    else:  # a real step's peak beside the estimate
        measured = dry_run["measured"]["bytes"]
        assert figures["measured_mib"] == round(measured / 2**20, 1) > 0
        assert figures["measured_over_estimate"] == round(measured / mixed["total"], 3)


def test_the_gpu_checks_readers_of_the_summarize_and_profile_parts():
    summarize_output = json.dumps({"settings": {}, "skipped": [{"model": "small"}], "results": [
        {"model": "paper", "batch_tokens": 16384, "compile_step": True, "records_per_s": 33.9, "tokens_per_s": 2031.1,
         "net_records_per_s": 42.4, "net_tokens_per_s": 2541.3, "startup_seconds": 11.86, "seconds": 59.1}]})
    figures = gpu_check._bench_summarize_figures(None, ["progress\n" + summarize_output])
    assert figures == {"paper/16384/graphs": {"records_per_s": 33.9, "tokens_per_s": 2031.1, "net_records_per_s": 42.4,
                                              "net_tokens_per_s": 2541.3, "startup_seconds": 11.86},
                       "skipped": [{"model": "small"}]}
    implementation = {"mfu": 0.0065, "src_tokens_per_s": 110193.1, "kernel_ms": 72.7, "gemm_time_share": 0.18,
                      "top_kernels": [{"name": "k", "ms": 1.0, "share": 0.1, "calls": 3}], "seconds": 0.36}
    profile_output = json.dumps({"results": [{"model": "paper", "case": "multinews", "padded": implementation,
                                              "packed": implementation}]})
    figures = gpu_check._profile_figures(None, [profile_output])
    assert set(figures) == {"paper/multinews/padded", "paper/multinews/packed"}
    assert figures["paper/multinews/packed"] == {key: value for key, value in implementation.items()
                                                 if key != "seconds"}


def test_the_gpu_checks_reader_of_the_attention_shapes_part():
    calls = {"pytorch": ({"median_ms": 148.906, "total_ms": 19602.9}, {"median_ms": 1.066, "total_ms": 109.5}, 139.71),
             "hiersum": ({"median_ms": 1.306, "total_ms": 142.3}, {"median_ms": 1.269, "total_ms": 142.6}, 1.03)}
    output = json.dumps({"settings": {"device": "cuda"}, "results": {
        choice: {"first": first, "again": again, "first_over_again": ratio}
        for choice, (first, again, ratio) in calls.items()}})
    assert gpu_check._attention_shapes_figures(None, ["warning\n" + output]) == {
        "pytorch": {"first_ms": 148.906, "again_ms": 1.066, "first_over_again": 139.71},
        "hiersum": {"first_ms": 1.306, "again_ms": 1.269, "first_over_again": 1.03}}
