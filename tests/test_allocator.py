"""hiersum.allocator: glibc's malloc keeps the memory a freed block held, so the next block of its size costs no
page faults; the environment can turn it off or has already tuned malloc; ``hiersum <action>`` applies it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hiersum import allocator
from hiersum.allocator import SWITCH_VARIABLE, why_not_kept
from hiersum.cli import main as cli_main

GLIBC = bool(allocator._glibc_version())

# A 64 MB block of malloc written, freed, and taken again: the second block's minor page faults (each 4 KB page the
# kernel maps and zeroes: 16,384 when the block comes from a fresh mmap, none when the freed one is reused). The
# block is glibc's own, as PyTorch's CPU tensors are (a tensor's small bookkeeping allocations can keep its freed
# block from merging back in a two-line script; a training loop's steps reuse them: docs/benchmarks.md).
SECOND_BLOCK_FAULTS = """
import ctypes, resource, sys
from hiersum.allocator import keep_freed_memory
print(keep_freed_memory(), file=sys.stderr)
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes, libc.memset.argtypes = [ctypes.c_void_p], [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
def faults_of_a_block(size=64 * 2**20):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = libc.malloc(size)
    libc.memset(block, 1, size)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    libc.free(block)
    return after - before
faults_of_a_block()
print(max(faults_of_a_block() for _ in range(3)))
"""


def second_block_faults(switch: str) -> tuple[int, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    result = subprocess.run([sys.executable, "-c", SECOND_BLOCK_FAULTS], capture_output=True, text=True,
                            env={**env, SWITCH_VARIABLE: switch}, timeout=120)
    assert result.returncode == 0, result.stderr
    return int(result.stdout.strip()), result.stderr.strip()


@pytest.mark.skipif(not GLIBC, reason="mallopt is glibc's")
def test_a_block_freed_leaves_its_pages_mapped_for_the_next_one():
    kept_faults, kept = second_block_faults("1")
    default_faults, default = second_block_faults("0")
    assert (kept, default) == ("True", "False")
    assert default_faults > 10_000  # glibc's default: the 64 MB block is mmapped anew and faulted in page by page
    assert kept_faults < 1_000


@pytest.mark.parametrize(("environ", "reason"), [
    ({SWITCH_VARIABLE: "0"}, f"{SWITCH_VARIABLE}=0"),
    ({"MALLOC_ARENA_MAX": "2"}, "malloc tuned by the environment (MALLOC_ARENA_MAX)"),
    ({"MALLOC_TRIM_THRESHOLD_": "0", "MALLOC_MMAP_MAX_": "1"},
     "malloc tuned by the environment (MALLOC_MMAP_MAX_, MALLOC_TRIM_THRESHOLD_)"),
    ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"}, "malloc tuned by the environment (GLIBC_TUNABLES)"),
    ({"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"},
     "an allocator preloaded (LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2)"),
])
def test_the_environment_can_leave_malloc_alone(environ, reason):
    assert why_not_kept(environ) == reason
    assert allocator.keep_freed_memory(environ) is False


@pytest.mark.skipif(not GLIBC, reason="mallopt is glibc's")
@pytest.mark.parametrize("environ", [{}, {SWITCH_VARIABLE: "1"}, {"GLIBC_TUNABLES": "glibc.pthread.rseq=0"},
                                     {"LD_PRELOAD": "libfaketime.so.1"}])
def test_otherwise_malloc_keeps_freed_memory(environ):
    assert why_not_kept(environ) is None
    assert allocator.keep_freed_memory(environ) is True


def test_another_c_library_is_left_alone(monkeypatch):
    monkeypatch.setattr(allocator, "_glibc_version", lambda: "")
    assert why_not_kept({}) == "the C library is not glibc"


def test_every_action_keeps_freed_memory_before_it_runs(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(cli_main, "keep_freed_memory", lambda: calls.append("kept"))
    with pytest.raises(SystemExit):  # argparse's help exits 0
        cli_main.main(["average-checkpoints", "--help"])
    cli_main.main(["evaluate", "--help"])
    assert calls == ["kept", "kept"]
    assert "usage: hiersum evaluate" in capsys.readouterr().out
