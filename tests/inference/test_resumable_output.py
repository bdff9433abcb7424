"""The record-by-record outputs of ``summarize`` and ``rank`` never mix two runs and never lose a written line:
resuming checks the output's provenance, ``overwrite=true`` starts afresh, an unwritable output is refused up
front, a side file's failure does not stop the output, a full disk or Ctrl-C / SIGTERM stop in one line with
every written line complete and the command that resumes; an empty input is a warning (``strict``: an error)."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch

from hiersum.commands.rank import rank
from hiersum.commands.summarize import summarize
from hiersum.data import jsonl_output
from hiersum.errors import RunStopped, UsageError
from tests.helpers.cli import BIN, alias, cli_env
from tests.helpers.config import compose_config
from tests.helpers.paths import PROJECT_ROOT, SAMPLE_DIR

PROG = alias("summarize")

pytestmark = pytest.mark.slow


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines()]


def fail_after_windows(monkeypatch: pytest.MonkeyPatch, windows: int, error: BaseException) -> None:
    """``summarize`` raises ``error`` when it starts its window number ``windows + 1`` (after writing those before)."""
    from hiersum.commands import summarize as module

    real, calls = module._summarize_window, []

    def window(*args, **kwargs):
        calls.append(1)
        if len(calls) > windows:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "_summarize_window", window)


@pytest.fixture()
def source(tmp_path) -> Path:
    lines = (SAMPLE_DIR / "test.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:6]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.fixture()
def run(tiny_cfg, checkpoint, source, tmp_path):
    """``run(*overrides)``: ``summarize`` of ``source`` into ``tmp_path/out.jsonl`` with greedy decoding."""
    output = tmp_path / "out.jsonl"

    def summarize_with(*overrides: str, model: Path = checkpoint):
        cfg = tiny_cfg(f"checkpoint={model}", f"input={source}", f"output={output}", "decode=greedy",
                       "decode.max_length=6", *overrides, name="summarize", output_dir=tmp_path / "hydra")
        return summarize(cfg)

    return summarize_with, output


def test_the_provenance_file_says_what_made_the_output(run, checkpoint, source):
    summarize_with, output = run
    summarize_with()
    provenance = json.loads(output.with_name("out.provenance.json").read_text())
    assert provenance["command"] == "summarize" and provenance["input"] == str(source.resolve())
    assert provenance["model_sha256"] == hashlib.sha256(checkpoint.read_bytes()).hexdigest()
    assert provenance["options"]["decode"]["greedy"] is True and provenance["options"]["decode"]["max_length"] == 6
    assert provenance["hiersum_version"]


@pytest.mark.parametrize(("change", "named"), [(("decode.max_length=7",), "options.decode"),
                                               (("attention=true",), "options.attention")])
def test_resuming_with_other_options_stops_naming_them_and_overwrite_starts_afresh(run, change, named):
    summarize_with, output = run
    summarize_with("sort_window=1")
    lines = output.read_text().splitlines()
    output.write_text("\n".join(lines[:3]) + "\n")  # a run that stopped half way
    before = digest(output)
    with pytest.raises(UsageError, match=rf"written with another {named}.*overwrite=true"):
        summarize_with(*change)
    assert digest(output) == before
    result = summarize_with(*change, "overwrite=true")
    assert (result.written, result.already_done) == (6, 0) and len(output.read_text().splitlines()) == 6
    summarize_with(*change)  # the provenance is now the new run's: resuming with its options goes on


def test_resuming_with_another_checkpoint_stops(run, trained_run):
    summarize_with, output = run
    first, second = sorted((trained_run / "checkpoints").glob("epoch*.ckpt"))
    summarize_with(model=first)
    before = digest(output)
    with pytest.raises(UsageError, match="written with another model_sha256"):
        summarize_with(model=second)
    assert digest(output) == before


def test_an_output_without_provenance_is_not_resumed(run):
    summarize_with, output = run
    output.write_text('{"id": "someone-else"}\n')
    with pytest.raises(UsageError, match="no out.provenance.json says what made them"):
        summarize_with()
    assert output.read_text() == '{"id": "someone-else"}\n'
    assert summarize_with("overwrite=true").written == 6 and "someone-else" not in output.read_text()


def test_an_output_that_cannot_be_written_is_refused_before_the_work(run, tmp_path, monkeypatch):
    summarize_with, _ = run
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match=r"cannot write output .*file/out\.jsonl: .*file is not a writable folder"):
        summarize_with(f"output={tmp_path / 'file' / 'out.jsonl'}")
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != read_only and real_access(path, mode))
    with pytest.raises(UsageError, match=r"cannot write output .*read-only/out\.jsonl"):
        summarize_with(f"output={read_only / 'out.jsonl'}")
    assert list(read_only.iterdir()) == []


def test_a_side_file_that_cannot_be_written_does_not_stop_the_output(run, source, capsys):
    summarize_with, output = run
    source.write_text(source.read_text() + "{not json\n")
    output.with_name("out.errors.jsonl").mkdir()  # the errors file cannot be a file there
    result = summarize_with()
    assert (result.written, result.errors) == (6, 1) and len(read_ids(output)) == 6
    assert "warning: cannot write" in capsys.readouterr().err


def test_a_full_disk_stops_in_one_line_and_the_rerun_completes_every_record_once(run, monkeypatch):
    summarize_with, output = run
    real_write, calls = os.write, []

    def write_until_full(fd, data):
        calls.append(len(data))
        if len(calls) > 2:
            real_write(fd, data[: len(data) // 2])  # what a full disk can leave: half a line
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(jsonl_output.os, "write", write_until_full)
    with pytest.raises(RunStopped, match="No space left on device.*2 summaries written, each line complete") as info:
        summarize_with("sort_window=1")
    assert info.value.exit_status == 1 and "to resume" in str(info.value)
    monkeypatch.setattr(jsonl_output.os, "write", real_write)
    result = summarize_with("sort_window=1")
    assert (result.written, result.already_done) == (4, 2)
    assert read_ids(output) == [json.loads(line)["id"] for line in (SAMPLE_DIR / "test.jsonl").open()][:6]


@pytest.mark.parametrize("error", [RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't "
                                                "allocate memory: you tried to allocate 93898752 bytes"),
                                   torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")])
def test_running_out_of_memory_names_the_batch_setting_to_lower(run, monkeypatch, error):
    summarize_with, output = run
    fail_after_windows(monkeypatch, 1, error)
    with pytest.raises(RunStopped, match=r"out of memory: lower batch_tokens \(now 8192\) or decode.batch_size "
                                         r"\(now 32\).*1 summaries written") as info:
        summarize_with("sort_window=1")
    assert info.value.exit_status == 1 and len(read_ids(output)) == 1
    fail_after_windows(monkeypatch, 0, RuntimeError("shape mismatch"))
    with pytest.raises(RuntimeError, match="shape mismatch"):  # another error is not taken for a lack of memory
        summarize_with("overwrite=true")


def test_ctrl_c_stops_in_one_line_with_what_was_written(run, monkeypatch):
    summarize_with, output = run
    fail_after_windows(monkeypatch, 2, KeyboardInterrupt())
    with pytest.raises(RunStopped, match=r"stopped by Ctrl-C: 2 summaries written to .*out\.jsonl") as info:
        summarize_with("sort_window=1")
    assert info.value.exit_status == 130 and len(read_ids(output)) == 2


def default_sigint() -> None:
    """In the child, before the command runs: SIGINT's default action, as under a terminal. A pytest started in
    the background (``make test &`` in a script) has SIGINT ignored and passes that on: Python then installs no
    KeyboardInterrupt handler, and the command runs to its end (exit 0) through the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(("sent", "status", "name"), [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "Ctrl-C")])
def test_a_signal_stops_the_command_in_one_line_and_the_rerun_completes(checkpoint, source, tmp_path, sent, status,
                                                                        name):
    output = tmp_path / "out.jsonl"
    args = [f"checkpoint={checkpoint}", f"input={source}", f"output={output}", "decode.beam_size=3",
            "decode.min_length=150", "decode.max_length=150", "decode.batch_size=1", "sort_window=1",
            f"hydra.run.dir={tmp_path / 'hydra'}"]
    process = subprocess.Popen([str(BIN / "hiersum"), "summarize", *args], cwd=PROJECT_ROOT, env=cli_env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               preexec_fn=default_sigint)
    deadline = time.monotonic() + 300
    while not (output.exists() and output.read_bytes().count(b"\n") >= 1):
        assert process.poll() is None and time.monotonic() < deadline, "no output before the process ended"
        time.sleep(0.02)
    process.send_signal(sent)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == status, stderr
    [line] = [line for line in stderr.splitlines() if "stopped by" in line]
    assert line.startswith(f"hiersum summarize: stopped by {name}:") and "Traceback" not in stderr
    assert "rerun hiersum summarize " in line and f"output={output}" in line and "to resume" in line
    n_before = len(read_ids(output))
    rerun = subprocess.run([str(BIN / PROG), *args], cwd=PROJECT_ROOT, env=cli_env(), capture_output=True,
                           text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert len(read_ids(output)) == 6 and f"({n_before} already there)" in rerun.stderr


def test_an_empty_input_is_a_warning_or_with_strict_an_error(run, source, capsys):
    summarize_with, output = run
    source.write_text("")
    assert summarize_with().written == 0
    assert "warning: " in capsys.readouterr().err and output.read_text() == ""
    with pytest.raises(UsageError, match=r"in\.jsonl holds no record: nothing to write \(strict=true\)"):
        summarize_with("strict=true", "overwrite=true")


def test_rank_checks_its_provenance_too(source, tmp_path):
    output = tmp_path / "ranked.jsonl"

    def run_rank(*extra: str):
        options = ["ranker=tfidf", f"input={source}", f"output={output}", *extra]
        return rank(compose_config("rank", options, tmp_path / "hydra"))

    run_rank("top_k=2")
    with pytest.raises(UsageError, match="written with another options.top_k"):
        run_rank("top_k=3")
    assert run_rank("top_k=3", "overwrite=true").written == 6
