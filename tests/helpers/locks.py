"""Another process holding the lock of an output (:mod:`hiersum.data.output_lock`), for the tests of one writer
per output."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

TIMEOUT = 180
"""Seconds any wait on a process of these tests may take: a guard against a hang, not a bound on speed (a
``hiersum summarize`` subprocess took over 60 s to take its lock, importing torch and loading its checkpoint, on the
shared 2-core machine at load average 11)."""
HOLD = """
import sys, time
from hiersum.data.output_lock import output_lock
with output_lock(sys.argv[1]):
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def lock_holder(output: Path, seconds: float = 600) -> subprocess.Popen:
    """A process holding the lock of ``output`` for ``seconds``, started and locked when this returns."""
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(output), str(seconds)], stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout is not None and process.stdout.readline() == "locked\n"  # "" if the process died first
    return process


def kill(process: subprocess.Popen) -> None:
    """SIGKILL ``process`` and wait for it to end."""
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=TIMEOUT)
    if process.stdout is not None:
        process.stdout.close()
