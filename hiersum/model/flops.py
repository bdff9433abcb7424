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

A batch without padding is counted as FlopCounterMode counts it (tested on the tiny model); padding makes
the executed work larger than this count, which is the point of counting real tokens. The encoders other
than ``hierarchical`` are not counted (:func:`training_flops` returns None).
"""

from __future__ import annotations

import time

import torch
from torch import Tensor
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

from hiersum.config import ModelConfig

FORWARD_AND_BACKWARD = 3
"""A training step costs three forward passes: the forward, and twice that in the backward."""


def training_flops(config: ModelConfig, vocab_size: int, src_mask: Tensor, tgt_mask: Tensor) -> int | None:
    """The FLOPs of one training step (forward and backward) on a batch: ``src_mask`` bool [B, P, T] and
    ``tgt_mask`` bool [B, S], True = real token. None for an encoder this count does not know."""
    if config.encoder != "hierarchical" or src_mask.dim() != 3:
        return None
    return FORWARD_AND_BACKWARD * forward_flops(config, vocab_size, src_mask, tgt_mask)


def forward_flops(config: ModelConfig, vocab_size: int, src_mask: Tensor, tgt_mask: Tensor) -> int:
    """The forward FLOPs of the hierarchical model on the real tokens (see the module docstring)."""
    D, F = config.d_model, config.ff_size
    lengths = src_mask.sum(-1).long()  # (B, P) real tokens of each paragraph
    source = lengths.sum(-1)  # (B,) real tokens of each example: its memory
    target = tgt_mask.sum(-1).long()  # (B,)
    N, S = int(source.sum()), int(target.sum())
    inter = {int(index) for index in config.inter_layers}
    encoder = 0
    for index in range(config.encoder_layers):
        if index in inter:
            encoder += _inter_layer(config, lengths)
        else:
            encoder += N * (8 * D * D + 4 * D * F) + 4 * D * int((lengths * lengths).sum())
    decoder_layer = (8 * S * D * D + 4 * D * int((target * target).sum())  # self-attention
                     + 4 * S * D * D + 4 * N * D * D + 4 * D * int((target * source).sum())  # context attention
                     + 4 * S * D * F)  # feed-forward
    return encoder + config.decoder_layers * decoder_layer + 2 * S * D * vocab_size


def _inter_layer(config: ModelConfig, lengths: Tensor) -> int:
    """One inter-paragraph layer; ``lengths`` [B, P] real tokens of each paragraph."""
    D, F, H = config.d_model, config.ff_size, config.inter_heads
    E = D // H
    N = int(lengths.sum())
    paragraphs = (lengths > 0).sum(-1)  # (B,) real paragraphs of each example
    R = int(paragraphs.sum())
    pooling = N * (2 * D * H + 2 * D * D)
    attention = 6 * R * H * E * E + 4 * E * H * int((paragraphs * paragraphs).sum()) + 2 * R * D * D
    return pooling + attention + 4 * N * D * F


def _cpu_attention_flops(query, key, value, *args, out_shape=None, **kwargs) -> int:
    """The custom mapping receives the shapes of the kernel's arguments."""
    return sdpa_flop_count(query, key, value)


def _cpu_attention_backward_flops(grad_out, query, key, value, *args, out_shape=None, **kwargs) -> int:
    return sdpa_backward_flop_count(grad_out, query, key, value)


CPU_ATTENTION_FLOPS = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _cpu_attention_flops,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward: _cpu_attention_backward_flops,
}
"""The CPU kernels of ``scaled_dot_product_attention``, which ``FlopCounterMode`` does not know: counted as
its other attention kernels are (the whole [L, M] score matrix, masked positions included)."""


def flop_counter() -> FlopCounterMode:
    """Counts matrix products and attention (forward and backward), on CPU as on CUDA."""
    return FlopCounterMode(display=False, custom_mapping=CPU_ATTENTION_FLOPS)


def matmul_roof(
    device: torch.device | str, size: int = 2048, repeats: int = 5, dtype: torch.dtype = torch.float32
) -> float:
    """GFLOP/s of the best of ``repeats`` products of two [size, size] matrices of ``dtype`` on ``device``: what
    the matrix products of a step could reach at most (the peak MFU is measured against on a CPU)."""
    device = torch.device(device)
    a, b = (torch.randn(size, size, device=device, dtype=dtype) for _ in range(2))
    best = float("inf")
    for _ in range(repeats + 1):  # the first is a warm-up
        _synchronize(device)
        start = time.perf_counter()
        a @ b
        _synchronize(device)
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


def _synchronize(device: torch.device) -> None:
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


def peak_flops(device: torch.device | str, dtype: torch.dtype, override_tflops: float | None = None) -> float | None:
    """The peak FLOP/s of ``device`` for matrix products of ``dtype``, the denominator of MFU: ``override_tflops``
    if given; on CUDA, :data:`GPU_PEAK_TFLOPS` for the GPU's name (fp32 counts as tf32 unless
    ``torch.get_float32_matmul_precision()`` is "highest"), None for a GPU not in it; on a CPU, the
    measured :func:`matmul_roof` for ``dtype``."""
    if override_tflops is not None:
        return override_tflops * 1e12
    device = torch.device(device)
    if device.type == "cpu":
        return matmul_roof(device, dtype=dtype) * 1e9
    if device.type != "cuda":
        return None
    if dtype == torch.float32:
        kind = "fp32" if torch.get_float32_matmul_precision() == "highest" else "tf32"
    else:
        kind = {torch.bfloat16: "bf16", torch.float16: "bf16"}.get(dtype, "")
    name = torch.cuda.get_device_name(device).upper()
    for key, peaks in GPU_PEAK_TFLOPS:
        if key in name:
            return peaks[kind] * 1e12 if kind in peaks else None
    return None
