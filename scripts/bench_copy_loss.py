"""The output layer and the copy loss's reading of its logits, alone: forward and backward of ``h @ W.T`` [N, V]
and a label-smoothed loss of its logsumexp, label score and mean, by
:func:`hiersum.training.logit_statistics.logit_statistics` at several block sizes, against autograd over the whole
``logits.float()`` (what ``copy_nll`` computed before), and the plain path's ``F.cross_entropy`` for comparison.
Prints one JSON object: the median milliseconds of each, the loss and the weight gradient's norm (the same to float
rounding across the block sizes and the whole tensor).

    python scripts/bench_copy_loss.py --tokens 2700 --vocab 8000 --width 128 --threads 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from datetime import datetime

import torch
import torch.nn.functional as F

from hiersum.allocator import keep_freed_memory
from hiersum.model.flops import cpu_name
from hiersum.training import logit_statistics as statistics_module
from hiersum.training.logit_statistics import logit_statistics

SMOOTHING = 0.1


def whole_tensor_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The loss by autograd over ``logits.float()``: logsumexp, gather and mean of the whole [N, V] fp32 tensor."""
    x = logits.float()
    normalizer = x.logsumexp(-1)
    label = x.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    return ((1 - SMOOTHING) * (normalizer - label) + SMOOTHING * (normalizer - x.mean(-1))).sum()


def blocked_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The same loss from :func:`logit_statistics` (its block size: the module's ``BLOCK_ELEMENTS`` at the call)."""
    stats = logit_statistics(logits, labels)
    return ((1 - SMOOTHING) * (stats.log_normalizer - stats.label_logit)
            + SMOOTHING * (stats.log_normalizer - stats.mean_logit)).sum()


def cross_entropy_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The plain (no copy) path's loss: ``F.cross_entropy`` with label smoothing on the logits as they come."""
    return F.cross_entropy(logits, labels, label_smoothing=SMOOTHING, reduction="sum")


def time_case(loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], hidden: torch.Tensor,
              weight: torch.Tensor, labels: torch.Tensor, repeats: int) -> dict[str, float]:
    """Median ms of the product, the loss and the backward; the last loss and the gradient's norm."""
    times, loss, grad = [], torch.zeros(()), torch.zeros(())
    for _ in range(repeats + 2):
        w = weight.clone().requires_grad_()
        start = time.perf_counter()
        loss = loss_fn(hidden @ w.t(), labels)
        loss.backward()
        times.append(time.perf_counter() - start)
        grad = w.grad
    return {"ms": round(1000 * statistics.median(times[2:]), 2), "loss": float(loss.detach()),
            "grad_norm": float(grad.float().norm())}


def main(argv: list[str] | None = None) -> dict:
    """Run the cases (module docstring); print and return the JSON object."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=2700, help="N, target tokens of a step (cnndm_cpu: ~2,700)")
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--block-rows", type=int, nargs="+", default=[32, 128, 512])
    parser.add_argument("--dtype", choices=["bfloat16", "float32"], default="bfloat16",
                        help="the product's dtype (bf16: as under bf16-mixed)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: as torch has them)")
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    kept = keep_freed_memory()
    dtype = getattr(torch, args.dtype)
    generator = torch.Generator().manual_seed(0)
    hidden = torch.randn(args.tokens, args.width, generator=generator).to(dtype)
    weight = (torch.randn(args.vocab, args.width, generator=generator) * 0.05).to(dtype)
    labels = torch.randint(0, args.vocab, (args.tokens,), generator=generator)
    cases = {"whole_fp32": time_case(whole_tensor_loss, hidden, weight, labels, args.repeats)}
    default_block = statistics_module.BLOCK_ELEMENTS
    for rows in args.block_rows:
        statistics_module.BLOCK_ELEMENTS = rows * args.vocab
        cases[f"blocks_of_{rows}"] = time_case(blocked_loss, hidden, weight, labels, args.repeats)
    statistics_module.BLOCK_ELEMENTS = default_block
    cases["default_blocks"] = time_case(blocked_loss, hidden, weight, labels, args.repeats)
    cases["cross_entropy_plain_path"] = time_case(cross_entropy_loss, hidden, weight, labels, args.repeats)
    report = {
        "date": datetime.now().isoformat(timespec="seconds"), "cpu": cpu_name(), "torch": torch.__version__,
        "threads": torch.get_num_threads(), "keep_freed_memory": kept, "tokens": args.tokens, "vocab": args.vocab,
        "width": args.width, "dtype": args.dtype, "default_block_rows": max(1, default_block // args.vocab),
        "cases": cases,
    }
    print(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
