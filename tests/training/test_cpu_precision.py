"""``${hiersum.cpu_precision:}`` (:mod:`hiersum.training.cpu_precision`): bf16-mixed on a CPU with bf16 matrix
instructions, 32-true on any other, read from ``/proc/cpuinfo``'s flags; the recipe that asks for it composes to the
precision of the machine it runs on."""

from __future__ import annotations

import pytest

from hiersum.config import Precision
from hiersum.training.cpu_precision import cpu_precision
from tests.helpers.config import compose_config


def cpuinfo(field: str, flags: str) -> str:
    return f"processor\t: 0\nmodel name\t: Some CPU\n{field}\t\t: {flags}\n"


@pytest.mark.parametrize(("field", "flags", "expected"), [
    ("flags", "fpu sse4_2 avx avx2 fma avx512f avx512bw avx512_vnni avx512_bf16", "bf16-mixed"),  # Zen 4
    ("flags", "fpu avx2 fma avx512f avx512bw amx_tile amx_bf16 amx_int8", "bf16-mixed"),  # Sapphire Rapids
    ("Features", "fp asimd asimdhp sve sve2 bf16 i8mm", "bf16-mixed"),  # Neoverse V2
    ("flags", "fpu sse4_2 avx avx2 fma avx512f avx512bw avx512_vnni", "32-true"),  # Cascade Lake: no bf16
    ("flags", "fpu sse4_2 avx avx2 fma f16c", "32-true"),  # Zen 2/3
    ("Features", "fp asimd asimdhp", "32-true"),
])
def test_the_precision_follows_the_cpus_bf16_instructions(field, flags, expected):
    assert cpu_precision(cpuinfo(field, flags)) == expected


def test_a_cpuinfo_without_flags_gives_fp32():
    assert cpu_precision("processor\t: 0\n") == "32-true"


def test_the_cnndm_cpu_recipe_composes_to_this_machines_precision(tmp_path):
    cfg = compose_config("train", ["experiment=cnndm_cpu", "data.path=/nonexistent"], tmp_path)
    assert cfg.trainer.precision == Precision(cpu_precision())
