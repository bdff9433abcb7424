"""The machine a run's figures come from (``metrics.json``'s ``machine``)."""

from __future__ import annotations

import os

import torch

from hiersum.evaluation.machine import KERNEL_FLAGS, cpu_flags, machine_description
from hiersum.model.flops import cpu_name

X86 = ("processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\n"
       "flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512_bf16 amx_tile\n")
ARM = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes sve i8mm bf16\n"


def test_the_kernel_flags_are_read_from_x86_and_arm_cpuinfo_in_one_order():
    assert cpu_flags(X86) == ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile"]
    assert cpu_flags(ARM) == ["asimd", "sve", "bf16", "i8mm"]
    assert cpu_flags("processor\t: 0\n") == []


def test_this_machine_is_described():
    machine = machine_description()
    assert machine["cpu"] == cpu_name() and machine["cpu_count"] == os.cpu_count()
    assert set(machine["cpu_flags"]) <= set(KERNEL_FLAGS)
    assert machine["torch_threads"] == torch.get_num_threads()
    assert (machine["gpu"] is None) == (not torch.cuda.is_available())
