"""One writer per output (:mod:`hiersum.data.output_lock`), with real processes: a second process is refused at
once naming the holder and touches nothing; a holder killed by SIGKILL does not block the next; processes that
lock and release in a loop are never two inside at once (the lock file deleted on release is never locked by two).
Every wait has a timeout."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from hiersum.data.output_lock import OutputLocked, lock_path, output_lock
from hiersum.errors import UsageError
from tests.helpers.locks import HOLD, TIMEOUT, kill, lock_holder

LOOP = """
import os, sys
from hiersum.data.output_lock import OutputLocked, output_lock
log = os.open(sys.argv[2], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
entered = 0
for _ in range(int(sys.argv[3])):
    try:
        with output_lock(sys.argv[1]):
            os.write(log, b"in %d\\n" % os.getpid())
            os.write(log, b"out %d\\n" % os.getpid())
            entered += 1
    except OutputLocked:
        pass
print(entered)
"""


def test_a_second_process_is_refused_at_once_naming_the_holder(tmp_path):
    output = tmp_path / "out.jsonl"
    first = lock_holder(output)
    try:
        # the holder sleeps 600 s, past the run's TIMEOUT: a process that waited for it would time out here
        refused = subprocess.run([sys.executable, "-c", HOLD, str(output), "0"], capture_output=True, text=True,
                                 timeout=TIMEOUT)
        assert refused.returncode != 0 and "locked" not in refused.stdout
        assert f"OutputLocked: output {output} is being written by another process (pid {first.pid} on " in (
            refused.stderr)
        with pytest.raises(OutputLocked, match=rf"\(pid {first.pid} on .* since .*: -c {re.escape(str(output))} 600\)"):
            with output_lock(output):
                pass
        assert not output.exists() and lock_path(output).exists()
    finally:
        kill(first)


def test_the_refusal_is_a_usage_error_in_one_line(tmp_path):
    output = tmp_path / "out.jsonl"
    first = lock_holder(output)
    try:
        with pytest.raises(UsageError) as refused, output_lock(output):
            pass
        assert "\n" not in str(refused.value) and "nothing was written" in str(refused.value)
    finally:
        kill(first)


def test_a_holder_killed_by_sigkill_does_not_block_the_next(tmp_path):
    output = tmp_path / "sub" / "out.jsonl"
    first = lock_holder(output)
    kill(first)
    assert lock_path(output).exists()  # the stale file stays; the kernel released its lock with the process
    second = lock_holder(output, 0)
    assert second.wait(timeout=TIMEOUT) == 0
    assert not lock_path(output).exists()  # released by a process that ended normally: deleted


def test_a_released_lock_is_taken_again_and_standard_output_has_none(tmp_path):
    output = tmp_path / "model"
    for _ in range(2):
        with output_lock(output, what="output directory"):
            assert lock_path(output) == tmp_path / ".model.lock" and lock_path(output).is_file()
        assert not lock_path(output).exists()
    with output_lock("-"):
        assert list(tmp_path.iterdir()) == []


def test_a_folder_that_cannot_hold_the_lock_file_is_a_usage_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(UsageError, match=r"cannot write output .*: .*file is not a writable folder"), \
            output_lock(blocker / "out.jsonl"):
        pass


@pytest.mark.slow  # locking processes
def test_processes_locking_in_a_loop_are_never_two_inside(tmp_path):
    output, log = tmp_path / "out.jsonl", tmp_path / "log"
    processes = [subprocess.Popen([sys.executable, "-c", LOOP, str(output), str(log), "3000"],
                                  stdout=subprocess.PIPE, text=True) for _ in range(4)]
    entered = []
    for process in processes:
        stdout, _ = process.communicate(timeout=TIMEOUT)
        assert process.returncode == 0
        entered.append(int(stdout))
    lines = log.read_text().splitlines()
    assert len(lines) == 2 * sum(entered) and sum(entered) >= 1
    for start, end in zip(lines[::2], lines[1::2], strict=True):  # every "in" directly followed by its own "out"
        assert start.startswith("in ") and end == "out " + start[3:]
    assert not lock_path(output).exists() and os.listdir(tmp_path) == ["log"]
