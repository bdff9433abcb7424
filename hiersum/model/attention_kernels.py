"""The one call of ``scaled_dot_product_attention`` in hiersum's attention, and the kernels it may pick.

Ragged batches give the attention a new shape at most steps: the paragraphs' count and width, the bucket sizes of the
packed encoder, the summaries' lengths. On CUDA, PyTorch prefers cuDNN's fused attention for bf16 and fp16 (cuDNN's
attention runs no other dtype), and cuDNN builds (and caches) an execution plan for each shape it has not seen:
measured on an H200 (torch 2.11, cuDNN 9.19; ``scripts/bench_attention_shapes.py``, docs/benchmarks.md), a forward
and backward of a shape seen for the first time took ~150 ms with cuDNN and ~1.3 ms without it, and a shape seen
again ~1.1 ms and ~1.3 ms. The paper-size model's first 200 bf16-mixed steps on the sample corpus trained in 66 s
with cuDNN and 26 s without. So on CUDA, hiersum leaves cuDNN's backend out of its half-precision attention (flash
attention where there is no mask, else the memory-efficient kernel, else the math one). fp32 on CUDA, which cuDNN's
attention does not run, and every call on a CPU are PyTorch's own call, with no context around them, but for one: a
CPU's bf16 attention that training differentiates runs in fp32 (:func:`fp32_attention` says why).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.attention import SDPBackend, sdpa_kernel

RAGGED_SHAPE_BACKENDS = (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH)
"""The backends of ``scaled_dot_product_attention`` allowed for half-precision attention on CUDA: all but cuDNN's,
whose first call on each new shape costs ~140x a call of a shape it has seen (the module's docstring)."""
CUDNN_DTYPES = (torch.float16, torch.bfloat16)
"""The dtypes cuDNN's attention runs: only these need its backend left out."""
cpu_bf16_training_in_fp32 = True
"""Whether a CPU's bf16 attention that training differentiates runs in fp32 (:func:`fp32_attention`); off only
inside :func:`attention_as_on_a_gpu`."""


@contextlib.contextmanager
def attention_as_on_a_gpu() -> Iterator[None]:
    """Inside, a CPU's bf16 attention stays bf16 in training too, as on a GPU: for the dry run
    (:mod:`hiersum.training.dry_run`), whose fake CPU tensors stand for a GPU's when it estimates a GPU's memory."""
    global cpu_bf16_training_in_fp32
    before, cpu_bf16_training_in_fp32 = cpu_bf16_training_in_fp32, False
    try:
        yield
    finally:
        cpu_bf16_training_in_fp32 = before


def attention(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, dropout_p: float) -> Tensor:
    """``scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)``, q [N, H, L, E], k and v
    [N, H, M, E], attn_mask broadcastable to [N, H, L, M] (bool, True = may attend; or float, added); returns
    [N, H, L, E]. On CUDA in fp16 or bf16 only :data:`RAGGED_SHAPE_BACKENDS` may run it (restored afterwards). A
    bf16 attention that training will differentiate runs on a CPU in fp32 (:func:`fp32_attention`)."""
    if (q.dtype == torch.bfloat16 and not q.is_cuda and torch.is_grad_enabled() and q.requires_grad
            and cpu_bf16_training_in_fp32):
        return fp32_attention(q, k, v, attn_mask, dropout_p).to(q.dtype)
    if not (q.is_cuda and q.dtype in CUDNN_DTYPES):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)
    with sdpa_kernel(list(RAGGED_SHAPE_BACKENDS)):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)


def fp32_attention(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, dropout_p: float) -> Tensor:
    """:func:`attention` of q, k and v cast to fp32, outside autocast (which would cast them back); a float mask
    is cast too. Why: a CPU's bf16 flash-attention backward is slow. In a ``cnndm_cpu`` step under ``bf16-mixed``
    (2026-11-29, 2 threads, ``scripts/bench_real_step.py``) it took 135-167 ms of the step against 45 ms for the
    same attention's fp32 backward, so that the bf16 matrix products' gain (2.3x the fp32 roof) was lost: the step
    took 1.0x fp32's; with the attention in fp32 it takes ~0.85x. Decoding (no gradient) keeps bf16 attention."""
    if attn_mask is not None and attn_mask.is_floating_point():
        attn_mask = attn_mask.float()
    with torch.autocast(q.device.type, enabled=False):
        return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=attn_mask, dropout_p=dropout_p)
