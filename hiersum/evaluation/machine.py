"""The machine a run's figures come from, recorded in each ``metrics.json`` beside the library versions: the CPU's
model and the instruction-set extensions its matrix kernels choose between (two CPU families give other figures
for the same run: docs/experiments.md), the cores and threads, and the GPU where one is present."""

from __future__ import annotations

import os
from typing import Any

import torch

from hiersum.model.flops import KERNEL_FLAGS, cpu_flags, cpu_name

__all__ = ["KERNEL_FLAGS", "cpu_flags", "machine_description"]


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
