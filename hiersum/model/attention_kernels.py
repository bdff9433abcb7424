"""The one call of ``scaled_dot_product_attention`` in hiersum's attention, and the kernels it may pick.

Ragged batches give the attention a new shape at most steps: the paragraphs' count and width, the bucket sizes of the
packed encoder, the summaries' lengths. On CUDA, PyTorch prefers cuDNN's fused attention for bf16 and fp16 (cuDNN's
attention runs no other dtype), and cuDNN builds (and caches) an execution plan for each shape it has not seen:
measured on an H200 (torch 2.11, cuDNN 9.19; ``scripts/bench_attention_shapes.py``, docs/benchmarks.md), a forward
and backward of a shape seen for the first time took ~150 ms with cuDNN and ~1.3 ms without it, and a shape seen
again ~1.1 ms and ~1.3 ms. The paper-size model's first 200 bf16-mixed steps on the sample corpus trained in 66 s
with cuDNN and 26 s without. So on CUDA, hiersum leaves cuDNN's backend out of its half-precision attention (flash
attention where there is no mask, else the memory-efficient kernel, else the math one). fp32 on CUDA, which cuDNN's
attention does not run, and every call on a CPU are PyTorch's own call, with no context around them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.attention import SDPBackend, sdpa_kernel

RAGGED_SHAPE_BACKENDS = (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH)
"""The backends of ``scaled_dot_product_attention`` allowed for half-precision attention on CUDA: all but cuDNN's,
whose first call on each new shape costs ~140x a call of a shape it has seen (the module's docstring)."""
CUDNN_DTYPES = (torch.float16, torch.bfloat16)
"""The dtypes cuDNN's attention runs: only these need its backend left out."""


def attention(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, dropout_p: float) -> Tensor:
    """``scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)``, q [N, H, L, E], k and v
    [N, H, M, E], attn_mask broadcastable to [N, H, L, M] (bool, True = may attend; or float, added); returns
    [N, H, L, E]. On CUDA in fp16 or bf16 only :data:`RAGGED_SHAPE_BACKENDS` may run it (restored afterwards)."""
    if not (q.is_cuda and q.dtype in CUDNN_DTYPES):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)
    with sdpa_kernel(list(RAGGED_SHAPE_BACKENDS)):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)
