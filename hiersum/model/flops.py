"""The FLOPs of a training step of the hierarchical model, counted on the real tokens of a batch (not the
padding), for throughput and MFU (``flops_per_batch`` of Lightning's ``ThroughputMonitor``).

What is counted: every matrix product and attention of the forward pass (2 FLOPs a multiply-add), as
``torch.utils.flop_counter.FlopCounterMode`` counts them, times 3 for forward plus backward (the backward of
a matrix product or of attention costs two of its forward); element-wise work, softmax, layer norms and the
optimizer are not. Per layer, with N real source tokens (L per paragraph), R real paragraphs (P per
example), S real target tokens (per example), M = N the memory, D width, F feed-forward width, V vocabulary:

- local layer: N (8 D^2 + 4 D F) + 4 D sum(L^2)
- inter layer: pooling N (2 D H + 2 D^2); paragraph attention 6 R H E^2 + 4 E H sum(P^2); output 2 R D^2;
  feed-forward 4 N D F (H pooling heads of width E = D / H)
- decoder layer: self-attention 8 S D^2 + 4 D sum(S^2); context attention 4 S D^2 + 4 M D^2 + 4 D sum(S M);
  feed-forward 4 S D F
- output projection: 2 S D V
- copy attention (``model.copy_attention``): keys 2 M D^2, query 2 S D^2, scores and context 4 D sum(S M),
  switch 6 S D (the scatter onto the vocabulary and the mixture are element-wise)

Each module counts its own share on the real tokens: the encoder and the decoder through the optional
``forward_flops`` capability of their contracts (``EncoderCountsFlops`` of
:mod:`hiersum.model.encoder_contract`, ``DecoderCountsFlops`` of :mod:`hiersum.model.decoder_contract`; the
hierarchical encoder's layers and the transformer decoder have it), the output projection and the copy attention
in :meth:`HierSum.forward_flops`. A model whose encoder or decoder does not count (the flat and pretrained encoders
today) gets None from :func:`training_flops`. A batch without padding is
counted as FlopCounterMode counts it (tested on the tiny model); padding makes the executed work larger than this
count, which is the point of counting real tokens.
"""

from __future__ import annotations

import datetime
import functools
import json
import logging
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

from hiersum.data.jsonl_output import write_json_atomically
from hiersum.data.sample_location import cache_root
from hiersum.private_apis import cpu_flash_attention_ops

if TYPE_CHECKING:
    from hiersum.model.summarizer import HierSum

log = logging.getLogger(__name__)

FORWARD_AND_BACKWARD = 3
"""A training step costs three forward passes: the forward, and twice that in the backward."""


def training_flops(model: HierSum, src_mask: Tensor, tgt_mask: Tensor) -> int | None:
    """The FLOPs of one training step (forward and backward) of ``model`` on a batch: ``src_mask`` bool [B, P, T]
    and ``tgt_mask`` bool [B, S], True = real token. Each module counts its own share
    (:meth:`HierSum.forward_flops`); None for a model whose encoder or decoder does not count."""
    forward = model.forward_flops(src_mask, tgt_mask)
    return None if forward is None else FORWARD_AND_BACKWARD * forward


def _cpu_attention_flops(query, key, value, *args, out_shape=None, **kwargs) -> int:
    """The custom mapping receives the shapes of the kernel's arguments."""
    return sdpa_flop_count(query, key, value)


def _cpu_attention_backward_flops(grad_out, query, key, value, *args, out_shape=None, **kwargs) -> int:
    return sdpa_backward_flop_count(grad_out, query, key, value)


CPU_ATTENTION_FLOPS = dict(zip(cpu_flash_attention_ops(), (_cpu_attention_flops, _cpu_attention_backward_flops),
                               strict=True))
"""The CPU kernels of ``scaled_dot_product_attention``, which ``FlopCounterMode`` does not know: counted as
its other attention kernels are (the whole [L, M] score matrix, masked positions included)."""


def flop_counter() -> FlopCounterMode:
    """Counts matrix products and attention (forward and backward), on CPU as on CUDA."""
    return FlopCounterMode(display=False, custom_mapping=CPU_ATTENTION_FLOPS)


@dataclass(frozen=True)
class Peak:
    """The peak FLOP/s of one device that MFU divides by, and where the figure comes from."""

    flops: float
    source: str
    """E.g. ``callbacks.throughput.available_flops``, ``data sheet: NVIDIA H100 80GB HBM3, bf16``, or the
    measured CPU roof with its machine, date and cache file (:func:`cpu_roof`)."""

    def as_dict(self) -> dict[str, Any]:
        """``{"gflops", "source"}``: what ``metrics.json`` records (``mfu_peak``) and the report shows."""
        return {"gflops": round(self.flops / 1e9, 1), "source": self.source}


@dataclass(frozen=True)
class RoofMeasurement:
    """:func:`measure_matmul_roof`: the best GFLOP/s of each round, and the roof (the best round)."""

    rounds: list[float]

    @property
    def gflops(self) -> float:
        return max(self.rounds)

    @property
    def spread(self) -> float:
        """(best - worst) / best over the rounds: how much the machine's load moved the figure."""
        return (max(self.rounds) - min(self.rounds)) / max(self.rounds)


ROOF_SIZE, ROOF_ROUNDS, ROOF_SECONDS = 2048, 5, 2.0
"""The CPU roof: the best product of two [2048, 2048] matrices in each of 5 rounds of 2 s (about 10 s); the roof is
the best round. One product takes ~0.1-0.4 s on the project's 2-core machine, so a round sees 5-20 of them; the
rounds' spread says how loaded the machine was (docs/training.md, "Throughput and MFU")."""

ROOF_FILE_VARIABLE = "HIERSUM_CPU_ROOF_FILE"
"""Environment variable: the file of cached CPU roofs (default ``$XDG_CACHE_HOME/hiersum/cpu_roof.json``)."""

ROOF_SPREAD_WARNING = 0.1
"""A measurement whose rounds spread more than this was taken on a busy machine (so is one taken while the load
average, this process's own work included, exceeded the cores): it is cached with ``"busy": true`` and logged as a
warning. On
the project's 2-core machine, under a load average of 4-10, the roof came out 20-40 GFLOP/s instead of ~187."""


ROOF_PROBE_SIZE = 256
"""The size of the products that time a dtype before its roof is measured (:func:`roof_matrix_size`)."""


def roof_matrix_size(probe_seconds: float, size: int, seconds: float) -> int:
    """The largest of ``size``, ``size / 2``, ... (down to :data:`ROOF_PROBE_SIZE`) whose product, predicted from
    one of [ROOF_PROBE_SIZE, ROOF_PROBE_SIZE] taking ``probe_seconds`` as growing with the cube of the size, takes
    at most a third of a round of ``seconds``. A dtype the CPU has no matrix instructions for is slow: bf16 without
    AVX-512 BF16 or AMX ran at ~1 GFLOP/s on the project's AVX2 host (0.9 GFLOP/s at [1024, 1024], one thread), so a
    [2048, 2048] product takes ~19 s and its 16 products ~5 minutes; at [512, 512] the measurement took 10.8 s at
    1.32 GFLOP/s (docs/training.md, "Throughput and MFU", has the command)."""
    while size > ROOF_PROBE_SIZE and probe_seconds * (size / ROOF_PROBE_SIZE) ** 3 > seconds / 3:
        size //= 2
    return size


def measure_matmul_roof(
    device: torch.device | str, *, dtype: torch.dtype = torch.float32, size: int = ROOF_SIZE,
    rounds: int = ROOF_ROUNDS, seconds: float = ROOF_SECONDS,
) -> RoofMeasurement:
    """GFLOP/s of the fastest product of two [size, size] matrices of ``dtype`` on ``device`` (at this process's
    thread count) in each of ``rounds`` rounds of ``seconds`` (at least 3 products a round, after one warm-up);
    ``size`` is smaller where the product would take over a third of a round (:func:`roof_matrix_size`, from the
    second of two products of [256, 256])."""
    device = torch.device(device)
    # its own generator: a run that measures the roof draws the same dropout as one that reads it from the cache
    generator = torch.Generator(device=device).manual_seed(0)
    if size > ROOF_PROBE_SIZE:
        p, q = (torch.randn(ROOF_PROBE_SIZE, ROOF_PROBE_SIZE, device=device, dtype=dtype, generator=generator)
                for _ in range(2))
        size = roof_matrix_size(min(_product_seconds(p, q, device) for _ in range(2)), size, seconds)
    a, b = (torch.randn(size, size, device=device, dtype=dtype, generator=generator) for _ in range(2))
    a @ b  # warm-up
    results = []
    for _ in range(rounds):
        best, count, end = float("inf"), 0, time.perf_counter() + seconds
        while count < 3 or time.perf_counter() < end:
            best, count = min(best, _product_seconds(a, b, device)), count + 1
        results.append(2 * size**3 / best / 1e9)
    return RoofMeasurement(results)


def _product_seconds(a: torch.Tensor, b: torch.Tensor, device: torch.device) -> float:
    """Wall seconds of ``a @ b`` on ``device``, its queue drained before and after."""
    synchronize(device)
    start = time.perf_counter()
    a @ b
    synchronize(device)
    return time.perf_counter() - start


def roof_file() -> Path:
    """``$HIERSUM_CPU_ROOF_FILE``, else ``$XDG_CACHE_HOME/hiersum/cpu_roof.json``."""
    return Path(os.environ.get(ROOF_FILE_VARIABLE) or cache_root() / "cpu_roof.json")


@functools.cache
def proc_cpuinfo() -> str:
    """The text of ``/proc/cpuinfo``, read once a process ("" where there is none): what :func:`cpu_name` and
    :func:`cpu_flags` read, the latter at every access of a config node that ``${hiersum.cpu_precision:}`` sets."""
    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return ""


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``; ``platform.processor()`` elsewhere)."""
    for line in proc_cpuinfo().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


KERNEL_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16",
                "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "asimd", "asimdhp", "sve", "sve2", "bf16", "i8mm")
"""The CPU flags (``/proc/cpuinfo``: ``flags`` on x86, ``Features`` on Arm) that decide which matrix-product and
vector kernels oneDNN, MKL and PyTorch's own run."""


def cpu_flags(cpuinfo: str | None = None) -> list[str]:
    """The :data:`KERNEL_FLAGS` the CPU has, in that order (``cpuinfo``: the text of ``/proc/cpuinfo``, read when
    None; an empty list where there is none)."""
    for line in (proc_cpuinfo() if cpuinfo is None else cpuinfo).splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            present = set(value.split())
            return [flag for flag in KERNEL_FLAGS if flag in present]
    return []


def cpu_roof(dtype: torch.dtype = torch.float32, *, remeasure: bool = False) -> Peak:
    """This machine's matrix-product roof for ``dtype`` at this process's thread count: measured once
    (:func:`measure_matmul_roof`) and cached in :func:`roof_file` under the machine's name, CPU, thread count
    and dtype, with the date; ``remeasure`` measures again and replaces the cached figure."""
    machine, threads = platform.node() or "unknown machine", torch.get_num_threads()
    key = f"{machine} | {cpu_name()} | {threads} threads | {str(dtype).removeprefix('torch.')}"
    path = roof_file()
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        entries = {}
    entry = entries.get(key) if isinstance(entries, dict) else None
    if remeasure or not isinstance(entry, dict) or not isinstance(entry.get("gflops"), int | float):
        load = os.getloadavg()[0]  # before the measurement: the others' load
        measured = measure_matmul_roof("cpu", dtype=dtype)
        busy = measured.spread > ROOF_SPREAD_WARNING or load > (os.cpu_count() or 1)  # the load counts this process
        entry = {"gflops": round(measured.gflops, 1), "rounds": [round(x, 1) for x in measured.rounds],
                 "spread": round(measured.spread, 3), "load_average": round(load, 2), "busy": busy,
                 "date": datetime.date.today().isoformat(), "torch": torch.__version__}
        entries = {**(entries if isinstance(entries, dict) else {}), key: entry}
        write_json_atomically(path, entries)
        log.log(logging.WARNING if busy else logging.INFO,
                "measured this CPU's %s matrix-product roof: %.1f GFLOP/s (rounds %s, spread %.0f%%, load average "
                "%.1f); cached in %s%s", dtype, entry["gflops"], entry["rounds"], 100 * measured.spread,
                entry["load_average"], path, "; the machine was busy: measure again when it is idle "
                "(callbacks.throughput.remeasure_roof=true)" if busy else "")
    busy = ", on a busy machine: too low" if entry.get("busy") else ""
    return Peak(entry["gflops"] * 1e9, f"{key}: matrix-product roof measured {entry.get('date', '?')} "
                                       f"(spread {entry.get('spread', 0):.0%}{busy}), cached in {path}")


def synchronize(device: torch.device) -> None:
    """Wait for the work queued on a CUDA ``device`` (a CPU runs each operator as it is called): what a timing on
    either device brackets its work with."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


GPU_PEAK_TFLOPS: tuple[tuple[str, dict[str, float]], ...] = (
    ("H200", {"bf16": 989.4, "tf32": 494.7, "fp32": 66.9}),
    ("H100 NVL", {"bf16": 835.5, "tf32": 417.8, "fp32": 60.0}),
    ("H100 PCIE", {"bf16": 756.5, "tf32": 378.0, "fp32": 51.2}),
    ("H100", {"bf16": 989.4, "tf32": 494.7, "fp32": 66.9}),
    ("A100", {"bf16": 312.0, "tf32": 156.0, "fp32": 19.5}),
    ("L40S", {"bf16": 362.1, "tf32": 183.0, "fp32": 91.6}),
    ("L4", {"bf16": 121.0, "tf32": 60.0, "fp32": 30.3}),
    ("RTX 4090", {"bf16": 165.2, "tf32": 82.6, "fp32": 82.6}),
    ("V100", {"fp32": 15.7}),
)
"""Peak dense TFLOP/s (no sparsity) of common NVIDIA GPUs, from NVIDIA's data sheets: bf16 and tf32 on the tensor
cores, fp32 without them. Looked up by the first key the device name holds (upper case), so the more specific
names come first ("H100 PCIE" before "H100" = SXM, "L40S" before "L4"). The SXM figures for parts sold as SXM
and PCIe (A100): a PCIe card at its lower clock gets a slightly higher MFU than it should. Not Lightning's
``get_available_flops``: in lightning 2.6 it gives the H200 and H100 NVL their sparse (2x) figures and knows no
GPU named plainly "NVIDIA H200" (what torch reports for the H200 SXM)."""


def device_peak(device: torch.device | str, dtype: torch.dtype, *, remeasure: bool = False) -> Peak | None:
    """The peak FLOP/s of ``device`` for matrix products of ``dtype``, the denominator of MFU: on CUDA,
    :data:`GPU_PEAK_TFLOPS` for the GPU's name (fp32 counts as tf32 unless ``torch.get_float32_matmul_precision()``
    is "highest"), None for a GPU not in it; on a CPU, the cached measured :func:`cpu_roof` for ``dtype``."""
    device = torch.device(device)
    if device.type == "cpu":
        return cpu_roof(dtype, remeasure=remeasure)
    if device.type != "cuda":
        return None
    if dtype == torch.float32:
        kind = "fp32" if torch.get_float32_matmul_precision() == "highest" else "tf32"
    else:
        kind = {torch.bfloat16: "bf16", torch.float16: "bf16"}.get(dtype, "")
    name = torch.cuda.get_device_name(device)
    for key, peaks in GPU_PEAK_TFLOPS:
        if key in name.upper():
            return Peak(peaks[kind] * 1e12, f"data sheet: {name}, {kind}") if kind in peaks else None
    return None


def peak_flops(device: torch.device | str, dtype: torch.dtype, override_tflops: float | None = None) -> float | None:
    """The FLOP/s of :func:`device_peak`, or ``override_tflops`` if given (the benchmarks' ``--peak-tflops``)."""
    if override_tflops is not None:
        return override_tflops * 1e12
    peak = device_peak(device, dtype)
    return None if peak is None else peak.flops
