"""``${hiersum.cpu_precision:}``: the faster training precision of this CPU, for recipes that train on a CPU.

A CPU with bf16 matrix instructions (x86 ``avx512_bf16`` or ``amx_bf16``, Arm ``bf16``) multiplies bf16 matrices at
~2.3x its fp32 roof (this project's AMD EPYC with AVX-512 BF16: 416 against 184 GFLOP/s at 2 threads), and a
``cnndm_cpu`` step under ``bf16-mixed`` takes ~0.85x fp32's (docs/benchmarks.md, "bf16-mixed on this host"); one
without them emulates bf16 and is slower than in fp32. So the recipe asks for ``bf16-mixed`` where the flags say
the CPU has the instructions, else ``32-true``.
"""

from __future__ import annotations

RESOLVER = "hiersum.cpu_precision"
"""``${hiersum.cpu_precision:}`` in ``conf/experiment/cnndm_cpu.yaml``: :func:`cpu_precision`."""

BF16_MATRIX_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")
"""CPU flags of bf16 matrix instructions (``/proc/cpuinfo``), any one of which makes ``bf16-mixed`` the faster."""


def cpu_precision(cpuinfo: str | None = None) -> str:
    """``bf16-mixed`` if the CPU has one of :data:`BF16_MATRIX_FLAGS`, else ``32-true`` (``cpuinfo``: the text of
    ``/proc/cpuinfo``, read when None; ``32-true`` where it cannot be read). Imported when called: the entry points
    register the resolver before ``--help``, which does not import torch."""
    from hiersum.model.flops import cpu_flags

    return "bf16-mixed" if set(BF16_MATRIX_FLAGS) & set(cpu_flags(cpuinfo)) else "32-true"
