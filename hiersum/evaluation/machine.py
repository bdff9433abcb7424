"""The machine a run's figures come from, recorded in each ``metrics.json`` beside the library versions: the CPU's
model and the instruction-set extensions its matrix kernels choose between (two CPU families give other figures
for the same run: docs/experiments.md), the cores and threads, and the GPU where one is present."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from hiersum.model.flops import cpu_name

KERNEL_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16",
                "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "asimd", "asimdhp", "sve", "sve2", "bf16", "i8mm")
"""The CPU flags (``/proc/cpuinfo``: ``flags`` on x86, ``Features`` on Arm) that decide which matrix-product and
vector kernels oneDNN, MKL and PyTorch's own run."""


def cpu_flags(cpuinfo: str | None = None) -> list[str]:
    """The :data:`KERNEL_FLAGS` the CPU has, in that order (``cpuinfo``: the text of ``/proc/cpuinfo``, read when
    None; an empty list where there is none)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8")
        except OSError:
            return []
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            present = set(value.split())
            return [flag for flag in KERNEL_FLAGS if flag in present]
    return []


def machine_description() -> dict[str, Any]:
    """``cpu`` (model name), ``cpu_flags``, ``cpu_count``, ``torch_threads`` and ``gpu`` (the name of CUDA device
    0, or None)."""
    return {
        "cpu": cpu_name(),
        "cpu_flags": cpu_flags(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }
