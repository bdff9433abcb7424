"""glibc's malloc told to keep the memory that tensors free, for the next step to reuse.

PyTorch's CPU tensors come from ``malloc``. glibc serves a block above its mmap threshold (at most 32 MB) with a
fresh ``mmap`` and gives it back to the kernel on ``free``, and trims the top of its heap likewise; the next
step's tensor of the same size then pays a page fault per 4 KB page, each page zeroed by the kernel. A CNN/DailyMail
training step allocates its [batch, summary, vocabulary] logits and their gradients (about 100 MB each) and a long
record's activations this way at every step: on the 2-core development host the kernel's page faults took a third
of a real-text step and half of a 100,000-token one (docs/benchmarks.md, "Memory the allocator gives back").

:func:`keep_freed_memory` sets ``mallopt(M_MMAP_MAX, 0)`` (no block is mmapped: every one comes from the heap) and
``mallopt(M_TRIM_THRESHOLD, -1)`` (the heap is never trimmed), as ``MALLOC_MMAP_MAX_=0
MALLOC_TRIM_THRESHOLD_=-1`` would at a process's start, so freed blocks stay mapped and are reused. The price is
the peak: the process keeps its high-water mark, and blocks of many sizes fragment the heap (peak RSS 1.4-1.8x on
those benchmarks, 2.0x over a whole timed ``cnndm_cpu`` run: 5.6 -> 11.1 GB). PyTorch's performance guide reaches
the same end by preloading jemalloc or tcmalloc (``LD_PRELOAD``); that needs a library this module cannot install,
and is left alone where a user preloads one.

``hiersum <action>`` calls it before the action runs (:mod:`hiersum.cli.main`), unless ``HIERSUM_KEEP_FREED_MEMORY=0``,
the process's malloc is already tuned (a ``MALLOC_*_`` variable, ``GLIBC_TUNABLES`` naming malloc, an ``LD_PRELOAD``
allocator), or the C library is not glibc (macOS, musl): then nothing changes. This module imports nothing of hiersum.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping

SWITCH_VARIABLE = "HIERSUM_KEEP_FREED_MEMORY"
"""``0``: leave glibc's malloc as it is."""

M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
"""``mallopt`` parameters (glibc's malloc.h)."""

_TUNED_BY_ENVIRONMENT = ("MALLOC_MMAP_MAX_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                         "MALLOC_ARENA_MAX")
_PRELOADED_ALLOCATORS = ("jemalloc", "tcmalloc", "mimalloc")


def why_not_kept(environ: Mapping[str, str]) -> str | None:
    """Why :func:`keep_freed_memory` leaves malloc alone in a process with ``environ``, or None where it acts."""
    if environ.get(SWITCH_VARIABLE, "1").strip() == "0":
        return f"{SWITCH_VARIABLE}=0"
    tuned = [name for name in _TUNED_BY_ENVIRONMENT if name in environ]
    if tuned or "malloc" in environ.get("GLIBC_TUNABLES", ""):
        return f"malloc tuned by the environment ({', '.join(tuned) or 'GLIBC_TUNABLES'})"
    preloaded = environ.get("LD_PRELOAD", "")
    if any(name in preloaded for name in _PRELOADED_ALLOCATORS):
        return f"an allocator preloaded (LD_PRELOAD={preloaded})"
    if not _glibc_version():
        return "the C library is not glibc"
    return None


def _glibc_version() -> str:
    """``glibc 2.36`` where the C library is glibc, else empty."""
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):  # no confstr (Windows), or a name this C library lacks
        return ""


def keep_freed_memory(environ: Mapping[str, str] | None = None) -> bool:
    """Make this process's glibc malloc keep freed memory (module docstring); True when it did. Safe to call again."""
    if why_not_kept(os.environ if environ is None else environ) is not None:
        return False
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, -1))
