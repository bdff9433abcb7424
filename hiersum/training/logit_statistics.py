"""What the training loss reads of the output layer's [N, V] scores, computed in fp32 a block of rows at a time.

A label-smoothed loss reads three numbers of each row x of the logits: its log-normalizer ``logsumexp_v x_v``, the
label's score ``x_y`` and the mean score ``mean_v x_v``:

    -log softmax(x)_y         = logsumexp(x) - x_y
    mean_v -log softmax(x)_v  = logsumexp(x) - mean(x)

and their gradient with respect to x is ``g_lse softmax(x) + g_y onehot(y) + g_mean / V``. Taken by autograd over
``logits.float()``, these are about ten passes over [N, V] fp32 tensors (the cast, amax, sub, exp, sum, the mean, the
gather's backward into a zero-filled [N, V], the sums of the three gradients and the cast back): with the
``cnndm_cpu`` recipe's [~2,700 tokens, 8,000] logits, 86 MB each, memory traffic that took ~80 ms of a 0.41 s CPU
step. :func:`logit_statistics` gives the same three numbers (row for row the same reductions) and the same gradient
(to float rounding) from one fp32 block of :data:`BLOCK_ELEMENTS` at a time, which stays in the CPU's cache, and keeps
for the backward only the logits as they came (bf16 under autocast) and the normalizers.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
from torch import Tensor

__all__ = ["BLOCK_ELEMENTS", "LogitStatistics", "logit_statistics"]

BLOCK_ELEMENTS = 1 << 20
"""Elements of one fp32 block (4 MB: the rows of ~130 target tokens at V = 8,000). On the 2-core EPYC host the output
layer's product, these statistics and their backward took 76-91 ms in blocks of 32 rows, 67-90 in blocks of 128 and
91-104 in blocks of 512 (out of the cache), against 109-121 ms for autograd over the whole fp32 tensor
(``scripts/bench_copy_loss.py``, docs/benchmarks.md)."""


class LogitStatistics(NamedTuple):
    """Three numbers of each row of the logits, fp32 [...] (the logits' leading dimensions)."""

    log_normalizer: Tensor
    """logsumexp_v x_v, the log of the softmax's denominator."""
    label_logit: Tensor
    """x_y, the label's score."""
    mean_logit: Tensor
    """mean_v x_v."""


def logit_statistics(logits: Tensor, labels: Tensor) -> LogitStatistics:
    """:class:`LogitStatistics` of ``logits`` [..., V] (any float dtype) at ``labels`` [...] (long, each in [0, V):
    the caller maps padding and ids past the vocabulary to one that is), differentiable with respect to ``logits``."""
    V = logits.size(-1)
    rows = logits.reshape(-1, V)
    log_normalizer, label_logit, mean_logit = _RowStatistics.apply(rows, labels.reshape(-1))
    shape = logits.shape[:-1]
    return LogitStatistics(log_normalizer.view(shape), label_logit.view(shape), mean_logit.view(shape))


def _block_rows(V: int) -> int:
    """Rows of a block of [R, V]: :data:`BLOCK_ELEMENTS` elements, at least one row."""
    return max(1, BLOCK_ELEMENTS // max(V, 1))


class _RowStatistics(torch.autograd.Function):
    """logsumexp, the label's entry and the mean of each row of [R, V], and their gradient, a block of rows at a time
    in fp32 (module docstring)."""

    @staticmethod
    def forward(ctx: Any, rows: Tensor, labels: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        R, V = rows.shape
        log_normalizer = rows.new_empty(R, dtype=torch.float32)
        mean_logit = rows.new_empty(R, dtype=torch.float32)
        step = _block_rows(V)
        for start in range(0, R, step):
            block = rows[start : start + step].float()  # (b, V)
            torch.logsumexp(block, -1, out=log_normalizer[start : start + step])
            torch.mean(block, -1, out=mean_logit[start : start + step])
        label_logit = rows.gather(-1, labels.unsqueeze(-1)).squeeze(-1).float()  # (R,)
        ctx.save_for_backward(rows, labels, log_normalizer)
        ctx.set_materialize_grads(False)  # a statistic the loss does not read comes back None: its pass is skipped
        return log_normalizer, label_logit, mean_logit

    @staticmethod
    def backward(ctx: Any, grad_normalizer: Tensor | None, grad_label: Tensor | None,
                 grad_mean: Tensor | None) -> tuple[Tensor, None]:
        rows, labels, log_normalizer = ctx.saved_tensors
        R, V = rows.shape
        grad_normalizer = rows.new_zeros(R, dtype=torch.float32) if grad_normalizer is None else grad_normalizer
        grad_rows = torch.empty_like(rows)
        step = _block_rows(V)
        for start in range(0, R, step):
            stop = start + step
            block = rows[start:stop].to(torch.float32, copy=True)  # (b, V), a copy even of fp32 rows: changed in place
            block.sub_(log_normalizer[start:stop, None]).exp_().mul_(grad_normalizer[start:stop, None])  # g softmax
            if grad_mean is not None:
                block.add_(grad_mean[start:stop, None] / V)
            if grad_label is not None:
                block.scatter_add_(1, labels[start:stop, None], grad_label[start:stop, None].float())
            grad_rows[start:stop] = block
        return grad_rows, None
