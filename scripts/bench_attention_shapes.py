"""The cost of the attention on shapes seen for the first time, as ragged batches bring them: a forward and backward of
``scaled_dot_product_attention`` with a key mask, timed on each of ``--shapes`` new shapes and then on the same shapes
again, by PyTorch's own choice of kernel (``pytorch``) and by hiersum's (``hiersum``,
:func:`hiersum.model.attention_kernels.attention`: on CUDA in half precision, every backend but cuDNN's).

    python scripts/bench_attention_shapes.py                      # CUDA when there is one: bf16, 40 shapes, 3 rounds
    python scripts/bench_attention_shapes.py --device cpu --shapes 5 --rounds 2 --max-rows 64 --max-width 32

Each round draws new shapes (N rows of 1 to 1023, width W of 2 to 159, ``--heads`` heads of ``--head-dim``; each row
a random number of real keys) and runs both choices on them, alternating which goes first from round to round. Prints
one JSON object: per choice, the median and total milliseconds of a first call and of a call again over all rounds,
and first / again. On a CPU both choices are PyTorch's (hiersum changes nothing there).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import torch
import torch.nn.functional as F

from hiersum.model.attention_kernels import attention

CHOICES = ("pytorch", "hiersum")
PRECISIONS = {"bf16": torch.bfloat16, "fp32": torch.float32}


def draw_shapes(rng: random.Random, count: int, max_rows: int, max_width: int) -> list[tuple[int, int]]:
    """``count`` distinct (N, W): rows below ``max_rows`` and a key width of 2 to ``max_width`` - 1."""
    shapes: set[tuple[int, int]] = set()
    while len(shapes) < count:
        shapes.add((rng.randrange(1, max_rows), rng.randrange(2, max_width)))
    return sorted(shapes)


def timed_step(choice: str, shape: tuple[int, int], args: argparse.Namespace) -> float:
    """Seconds of one forward and backward of the attention on ``shape`` by ``choice``."""
    n, width = shape
    device, dtype = torch.device(args.device), PRECISIONS[args.precision]
    q, k, v = (torch.randn(n, args.heads, width, args.head_dim, device=device, dtype=dtype, requires_grad=True)
               for _ in range(3))  # (N, H, W, E)
    real_keys = torch.randint(1, width + 1, (n, 1), device=device)
    mask = (torch.arange(width, device=device) < real_keys).view(n, 1, 1, width)
    synchronize = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    synchronize()
    start = time.perf_counter()
    if choice == "hiersum":
        out = attention(q, k, v, mask, args.dropout)
    else:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=args.dropout)
    out.float().sum().backward()
    synchronize()
    return time.perf_counter() - start


def summary(seconds: list[float]) -> dict[str, float]:
    return {"median_ms": round(1000 * statistics.median(seconds), 3), "total_ms": round(1000 * sum(seconds), 1)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--precision", choices=sorted(PRECISIONS), default=None,
                        help="bf16 on CUDA, fp32 on a CPU by default")
    parser.add_argument("--shapes", type=int, default=40, help="new shapes a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-rows", type=int, default=1024, help="rows N of a shape: 1 to this, less one")
    parser.add_argument("--max-width", type=int, default=160, help="key width W of a shape: 2 to this, less one")
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--head-dim", type=int, default=32, help="the paper-size model's: 256 / 8")
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.precision = args.precision or ("bf16" if args.device.startswith("cuda") else "fp32")
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    for choice in CHOICES:  # the first call of each, on a shape no round draws (8 rows)
        timed_step(choice, (8, 4), args)
    first: dict[str, list[float]] = {choice: [] for choice in CHOICES}
    again: dict[str, list[float]] = {choice: [] for choice in CHOICES}
    for round_index in range(args.rounds):
        shapes = draw_shapes(rng, args.shapes, args.max_rows, args.max_width)
        for choice in CHOICES if round_index % 2 == 0 else CHOICES[::-1]:
            first[choice] += [timed_step(choice, shape, args) for shape in shapes]
            again[choice] += [timed_step(choice, shape, args) for shape in shapes]
    results = {choice: {"first": summary(first[choice]), "again": summary(again[choice]),
                        "first_over_again": round(statistics.median(first[choice]) / statistics.median(again[choice]),
                                                  2)} for choice in CHOICES}
    report = {"settings": {**vars(args), "torch": torch.__version__,
                           "cudnn": torch.backends.cudnn.version() if args.device.startswith("cuda") else None,
                           "device_name": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"},
              "results": results}
    print(json.dumps(report), flush=True)
    return report


if __name__ == "__main__":
    main()
