"""Training-step throughput of HierSum: the packed encoder (real tokens only) vs the padded-grid reference.

    python scripts/bench_train.py                                    # small and paper sizes, all cases, CPU
    python scripts/bench_train.py --models small --cases ragged --repeats 5
    python scripts/bench_train.py --device cuda
    python scripts/bench_train.py --models small --cases multinews --part encoder   # the encoder's share
    python scripts/bench_train.py --models small --cases multinews --profile        # where the time goes
    python scripts/bench_train.py --models small --cases multinews --compile        # compiled against eager
    python scripts/bench_train.py --device cuda --precision bf16-mixed --compile

Prints one JSON object. One training step = forward, label-smoothed NLL (0.1, summed over target
tokens / their number, as ``HierSumModule``), backward, Adam. Both implementations run in this one
process, on copies of the same randomly initialised weights (seed 0, dropout 0), their timed steps
interleaved (padded, packed, padded, ...) so that a change of machine load hits both alike; compare
the ratios, not the absolute figures, on a shared machine.

Cases:
- ``dense``: 4 x 16 x 48, every token real; targets of 64 tokens.
- ``ragged``: 8 x 24 x 64, random paragraph counts and lengths (60.0% of the grid real); targets of
  40 to 64 tokens.
- ``multinews``: real batches of the shared Multi-News sample (``../shared/data/multi-news-sample``,
  skipped when absent) through hiersum's own pipeline: a BPE tokenizer of ``--vocab`` pieces trained on
  it, the ``data=multinews`` selection (round robin, 24 paragraphs x 100 tokens, 256 target tokens),
  token-budget batches (16384) sorted by size; ``--multinews-batches`` of them, evenly spread over the
  size order, are timed.

Figures: ``src_tokens_per_s`` and ``tgt_tokens_per_s`` count real (non-pad) source and target tokens;
``seconds`` is the median over ``--repeats`` of one pass over the case's batches (wall clock);
``cpu_seconds`` the same in CPU time of this process (``time.process_time``: what the step costs, less
sensitive than the wall clock to other tenants' load); ``speedup`` and ``cpu_speedup`` are padded
over packed. ``gflop``: the floating-point operations of one pass in matrix products and attention (forward
and backward, counted by ``torch.utils.flop_counter.FlopCounterMode``; element-wise work and the optimizer are
not counted), ``gflop_per_s`` that over ``seconds``, and ``share_of_roof`` that over ``peak_gflop_per_s``,
on a CPU the rate of one large matrix product (2048^3, best of 5) measured at the start of the run. ``flop_ratio``
(padded over packed ``gflop``) is the speedup packing gives when both implementations run at the same share of
the roof: ``speedup = flop_ratio x packed share / padded share``. ``peak_activation_mb``: the most memory the
tensors autograd saves for backward hold at once during the step (storages counted once, parameters excluded),
i.e. the step's memory beyond weights, gradients and Adam state; on CUDA, ``peak_memory_mb`` is
``torch.cuda.max_memory_allocated`` as well. ``memory_fill``: real tokens over the rows of the decoder memory
[B, M] (M = the most real tokens of an example of the batch). With ``--profile``, one more pass of each
implementation under ``torch.profiler`` gives, on a CPU, ``matmul_time_share`` (matrix products' share of its
operator time) and ``matmul_gflop_per_s`` (their rate); on CUDA, ``kernel_ms`` (the GPU's busy time in the pass),
``gemm_time_share`` (the share of it in matrix-product kernels: cuBLAS/CUTLASS gemm) and ``top_kernels`` (the
``TOP_KERNELS`` kernels with the most GPU time: name, milliseconds, share, calls): what bounds a step's MFU.

``mfu``: the model FLOPs of the real tokens (:func:`hiersum.model.flops.training_flops`, forward and backward, no
padding) over ``seconds``, over the peak of the device for the step's matrix products
(:func:`hiersum.model.flops.peak_flops`: on a CPU the measured roof of fp32, or of bf16 with ``--precision
bf16-mixed``; on CUDA the GPU's data-sheet peak of that type; ``--peak-tflops`` overrides). ``--precision
bf16-mixed`` runs forward and loss under Lightning's ``MixedPrecision`` plugin (autocast to bfloat16, fp32
weights and optimizer), as ``trainer.precision=bf16-mixed`` does.

``--compile`` compares the packed model compiled (:meth:`hiersum.model.HierSum.compile`, inductor, dynamic sizes)
against the same weights eager, instead of padded against packed: ``eager`` and ``compiled`` in the results,
``speedup`` = eager over compiled. Before the timed passes the compiled model trains once over ``compile_batches``
(for ``multinews``: every batch of the sample, an epoch; else the case's batches), from a fresh compile cache:
``first_step_seconds`` is its first step (compiling included; the eager first step beside it; ``..._cpu_seconds``
the same in CPU time of this process, inductor's compile workers not counted), ``warmup_seconds``
the whole warm-up pass, and ``graphs`` the graphs dynamo compiled over it (``torch._dynamo.utils.counters``,
``unique_graphs``). The timed passes then see no new shape.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import random
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import median
from typing import Any

import torch
import torch._dynamo
from pytorch_lightning.plugins.precision import MixedPrecision
from torch._dynamo.utils import counters

from hiersum.allocator import keep_freed_memory
from hiersum.config import DataConfig
from hiersum.data.batching import collate, make_token_budget_batches
from hiersum.data.corpus_splits import read_split
from hiersum.data.packing import PackedGrid
from hiersum.data.schema import IGNORE_INDEX, Batch
from hiersum.data.selection import encode_examples, encoding_config
from hiersum.data.tokenizer import train_tokenizer
from hiersum.model import HierSum
from hiersum.model.flops import flop_counter, peak_flops, synchronize, training_flops
from hiersum.training.module import label_smoothed_nll

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode import model_config  # noqa: E402  (same model sizes as the decoding benchmark)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.helpers.padded import use_padded_grid  # noqa: E402  (the padded-grid reference lives with the tests)

ROOT = Path(__file__).resolve().parents[1]
MULTINEWS = ROOT.parent / "shared" / "data" / "multi-news-sample"
CASES = ("dense", "ragged", "multinews")
PAD, BOS, EOS = 0, 1, 2
PRECISIONS = {"32-true": torch.float32, "bf16-mixed": torch.bfloat16}
"""``--precision``: Lightning's names, and the dtype of the step's matrix products."""


@dataclass
class StepBatch:
    """What one training step reads."""

    src: torch.Tensor
    """[B, P, T] long"""
    src_mask: torch.Tensor
    """[B, P, T] bool, True = real token"""
    tgt_in: torch.Tensor
    """[B, S] long"""
    labels: torch.Tensor
    """[B, S] long, IGNORE_INDEX at padding"""
    layout: PackedGrid
    """the packed layout of ``src_mask``, made beforehand (as ``collate`` does)"""

    def to(self, device: torch.device) -> StepBatch:
        return StepBatch(*(t.to(device) for t in (self.src, self.src_mask, self.tgt_in, self.labels)),
                         self.layout.to(device))


def synthetic_batch(
    generator: torch.Generator, vocab: int, paragraph_counts: list[int], lengths: list[list[int]],
    target_lengths: list[int],
) -> StepBatch:
    """A batch whose example b has ``paragraph_counts[b]`` paragraphs of ``lengths[b][p]`` tokens."""
    B, P, T, S = len(paragraph_counts), max(paragraph_counts), max(map(max, lengths)), max(target_lengths)
    src = torch.randint(3, vocab, (B, P, T), generator=generator)
    src_mask = torch.zeros(B, P, T, dtype=torch.bool)
    for b, count in enumerate(paragraph_counts):
        for p in range(count):
            src_mask[b, p, : lengths[b][p]] = True
    tgt = torch.randint(3, vocab, (B, S + 1), generator=generator)
    real_tgt = torch.arange(S) < torch.tensor(target_lengths).unsqueeze(1)  # (B, S)
    tgt_in = tgt[:, :-1].masked_fill(~real_tgt, PAD)
    tgt_in[:, 0] = BOS
    return StepBatch(src.masked_fill(~src_mask, PAD), src_mask, tgt_in, tgt[:, 1:].masked_fill(~real_tgt, IGNORE_INDEX),
                     PackedGrid.from_mask(src_mask, widest=T))


def dense_batches(vocab: int) -> list[StepBatch]:
    generator = torch.Generator().manual_seed(0)
    return [synthetic_batch(generator, vocab, [16] * 4, [[48] * 16] * 4, [64] * 4)]


def ragged_batches(vocab: int) -> list[StepBatch]:
    """8 x 24 x 64: paragraph counts 16..24 and lengths 22..64 (one of each maximum), 60.0% real."""
    rng = random.Random(0)
    counts = [24] + [rng.randint(16, 24) for _ in range(7)]
    lengths = [[rng.randint(22, 64) for _ in range(count)] for count in counts]
    lengths[0][0] = 64
    targets = [rng.randint(40, 64) for _ in counts]
    return [synthetic_batch(torch.Generator().manual_seed(0), vocab, counts, lengths, targets)]


def multinews_batches(
    vocab: int, count: int, folder: Path = MULTINEWS
) -> tuple[list[StepBatch], list[StepBatch], dict]:
    """``count`` token-budget batches of the Multi-News sample (``folder``/validation.jsonl), evenly spread over the
    size order, all of its batches (an epoch), and the fill of the whole sample's batches."""
    data = replace(DataConfig(path=str(folder), format="multinews"), max_paragraphs=24, max_paragraph_tokens=100,
                   max_target_tokens=256, selection="round_robin", title_paragraph=False, batch_tokens=16384,
                   max_batch_size=32)
    examples = read_split(folder / "validation.jsonl", "multinews")
    texts = (text for e in examples for text in [*e.references, *(p for d in e.documents for p in d)] if text)
    tokenizer = train_tokenizer(texts, vocab_size=vocab)
    encoded = encode_examples(examples, tokenizer, encoding_config(data))
    groups = make_token_budget_batches(encoded, batch_tokens=data.batch_tokens, max_batch_size=data.max_batch_size)
    ids = tokenizer.special
    batches = [collate([encoded[i] for i in group], pad_id=ids.pad, bos_id=ids.bos, eos_id=ids.eos,
                       max_paragraph_tokens=data.max_paragraph_tokens) for group in groups]
    fill = {
        "examples": len(encoded), "batches": len(batches),
        "real_src_tokens": sum(int(b.src_mask.sum()) for b in batches),
        "grid_src_tokens": sum(b.src_mask.numel() for b in batches),
        "real_tgt_tokens": sum(int(b.tgt_mask.sum()) for b in batches),
        "grid_tgt_tokens": sum(b.tgt_mask.numel() for b in batches),
    }
    picked = sorted({round(i * (len(batches) - 1) / max(count - 1, 1)) for i in range(count)})
    epoch = [step_batch(batch) for batch in batches]
    return [epoch[i] for i in picked], epoch, fill


def step_batch(batch: Batch) -> StepBatch:
    assert batch.layout is not None  # a grid batch
    return StepBatch(batch.src, batch.src_mask, batch.tgt_in, batch.target_labels(), batch.layout)


PARTS = ("step", "encoder")
"""``--part``: the whole training step, or the encoder alone (its forward, a stand-in loss, the backward)."""


def training_step(
    model: HierSum, optimizer: torch.optim.Optimizer, batch: StepBatch, part: str = "step",
    precision: str = "32-true",
) -> None:
    """One step; the packed model reads the batch's layout, the padded reference ignores it."""
    autocast = MixedPrecision(precision, batch.src.device.type) if precision == "bf16-mixed" else None
    with autocast.forward_context() if autocast else contextlib.nullcontext():
        if part == "encoder":  # the encoder's share of a step: the loss stands in for the decoder's gradient
            loss = model.encode(batch.src, batch.src_mask, layout=batch.layout).memory.float().square().mean()
        else:
            logits = model(batch.src, batch.src_mask, batch.tgt_in, layout=batch.layout).logits
            loss = label_smoothed_nll(logits, batch.labels, 0.1)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


def peak_activation_bytes(
    model: HierSum, optimizer: torch.optim.Optimizer, batch: StepBatch, part: str, precision: str
) -> int:
    """The most bytes held by the tensors saved for backward at any point of one step (see the docstring)."""
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    held: dict[int, int] = {}
    peak = 0

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        nonlocal peak
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters and storage.device.type != "meta":
            held[storage.data_ptr()] = storage.nbytes()
            peak = max(peak, sum(held.values()))
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        training_step(model, optimizer, batch, part, precision)
    return peak


MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::bmm")


def matmul_profile(
    model: HierSum, optimizer: torch.optim.Optimizer, batches: list[StepBatch], part: str, precision: str
) -> dict[str, float]:
    """One pass under ``torch.profiler`` (CPU): the share of the pass's operator time spent in matrix products
    (``MATMUL_OPS``, self time) and the GFLOP/s they run at, which ``share_of_roof`` cannot tell apart from
    the time the step spends elsewhere (element-wise work, softmaxes, LayerNorms, index copies, Adam)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_flops=True) as profiler:
        for batch in batches:
            training_step(model, optimizer, batch, part, precision)
    events = profiler.key_averages()
    total_us = sum(event.self_cpu_time_total for event in events)
    matmul_us = sum(event.self_cpu_time_total for event in events if event.key in MATMUL_OPS)
    matmul_flops = sum(event.flops for event in events if event.key in MATMUL_OPS)
    return {"matmul_time_share": round(matmul_us / total_us, 3),
            "matmul_gflop_per_s": round(matmul_flops / matmul_us / 1e3, 1)}


TOP_KERNELS = 12
"""Kernels ``--profile`` lists on CUDA, by GPU time."""
GEMM_KERNEL_MARKS = ("gemm", "cutlass", "xmma", "wgmma", "cublas")
"""What the names of matrix-product kernels hold (cuBLAS, CUTLASS, Hopper's wgmma)."""


def kernel_profile(
    model: HierSum, optimizer: torch.optim.Optimizer, batches: list[StepBatch], part: str, precision: str
) -> dict[str, Any]:
    """One pass under ``torch.profiler`` on CUDA: the GPU time of its kernels, the share of matrix products in it
    and the ``TOP_KERNELS`` kernels that take the most."""
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as profiler:
        for batch in batches:
            training_step(model, optimizer, batch, part, precision)
        torch.cuda.synchronize()
    return kernel_summary([event for event in profiler.key_averages()
                           if event.device_type == torch.autograd.DeviceType.CUDA and not event.is_user_annotation])


def kernel_summary(kernels: list[Any]) -> dict[str, Any]:
    """``kernel_profile``'s figures from the profiler's kernel events (``key``, ``self_device_time_total`` in
    microseconds, ``count``), user annotations left out (``Optimizer.step#Adam.step`` spans the optimizer's
    kernels on the GPU's timeline: counted, it would count them twice)."""
    busy_us = sum(event.self_device_time_total for event in kernels)
    gemm_us = sum(event.self_device_time_total for event in kernels
                  if any(mark in event.key.lower() for mark in GEMM_KERNEL_MARKS))
    top = sorted(kernels, key=lambda event: event.self_device_time_total, reverse=True)[:TOP_KERNELS]
    return {"kernel_ms": round(busy_us / 1e3, 2), "gemm_time_share": round(gemm_us / max(busy_us, 1e-9), 3),
            "top_kernels": [{"name": event.key[:120], "ms": round(event.self_device_time_total / 1e3, 3),
                             "share": round(event.self_device_time_total / max(busy_us, 1e-9), 3),
                             "calls": event.count} for event in top]}


def timed_pass(
    model: HierSum, optimizer: torch.optim.Optimizer, batches: list[StepBatch], device: torch.device, part: str,
    precision: str,
) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one pass over ``batches``."""
    synchronize(device)
    start, cpu_start = time.perf_counter(), time.process_time()
    for batch in batches:
        training_step(model, optimizer, batch, part, precision)
    synchronize(device)
    return time.perf_counter() - start, time.process_time() - cpu_start


def build_models(args: argparse.Namespace, model_name: str, device: torch.device) -> dict[str, HierSum]:
    """The two implementations compared, on copies of the same weights: padded and packed, or (``--compile``)
    the packed model eager and compiled."""
    torch.manual_seed(0)
    packed = HierSum(model_config(model_name), vocab_size=args.vocab, pad_id=PAD, bos_id=BOS, eos_id=EOS)
    other = copy.deepcopy(packed)
    if args.compile:
        other.compile()
        models = {"eager": packed, "compiled": other}
    else:
        use_padded_grid(other)
        models = {"padded": other, "packed": packed}
    return {name: model.train().to(device) for name, model in models.items()}


def compile_warmup(
    args: argparse.Namespace, models: dict[str, HierSum], optimizers: dict[str, torch.optim.Optimizer],
    batches: list[StepBatch], device: torch.device,
) -> dict:
    """One training pass of the compiled model over ``batches`` from a fresh compile cache (see the module
    docstring): its first step beside the eager model's, the whole pass, and the graphs compiled."""
    torch._dynamo.reset()
    counters.clear()
    first, first_cpu = {}, {}
    for name in ("eager", "compiled"):
        synchronize(device)
        start, cpu_start = time.perf_counter(), time.process_time()
        training_step(models[name], optimizers[name], batches[0], args.part, args.precision)
        synchronize(device)
        first[name], first_cpu[name] = time.perf_counter() - start, time.process_time() - cpu_start
    synchronize(device)
    start = time.perf_counter()
    for batch in batches[1:]:
        training_step(models["compiled"], optimizers["compiled"], batch, args.part, args.precision)
    synchronize(device)
    warmup = {"compile_batches": len(batches), "graphs": int(counters["stats"]["unique_graphs"]),
              "first_step_seconds": round(first["compiled"], 2), "eager_first_step_seconds": round(first["eager"], 2),
              "first_step_cpu_seconds": round(first_cpu["compiled"], 2),
              "eager_first_step_cpu_seconds": round(first_cpu["eager"], 2),
              "warmup_seconds": round(first["compiled"] + time.perf_counter() - start, 2)}
    print(json.dumps({"compile_warmup": warmup}), file=sys.stderr, flush=True)
    return warmup


def run_case(
    args: argparse.Namespace, model_name: str, case: str, batches: list[StepBatch], epoch: list[StepBatch],
    peak: float | None,
) -> dict:
    device = torch.device(args.device)
    models = build_models(args, model_name, device)
    optimizers = {name: torch.optim.Adam(m.parameters(), lr=1e-4, betas=(0.9, 0.998), eps=1e-9)
                  for name, m in models.items()}
    batches = [b.to(device) for b in batches]
    extra, gflop = {}, {}  # per implementation: memory (and profile) figures, GFLOP of one pass
    compiled = {}
    if args.compile:
        compiled = compile_warmup(args, models, optimizers, [b.to(device) for b in epoch], device)
    for name, model in models.items():
        if name == "compiled":  # the same work as eager: counted there (the counter's mode is not traced)
            extra[name], gflop[name] = {}, gflop["eager"]
            continue
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
        with flop_counter() as counter:  # also the warm-up
            activation = max(peak_activation_bytes(model, optimizers[name], b, args.part, args.precision)
                             for b in batches)
        extra[name] = {"peak_activation_mb": round(activation / 2**20, 1)}
        gflop[name] = counter.get_total_flops() / 1e9
        if device.type == "cuda":
            extra[name]["peak_memory_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in models}
    for _ in range(args.repeats):
        for name, model in models.items():
            times[name].append(timed_pass(model, optimizers[name], batches, device, args.part, args.precision))
    if args.profile:
        for name, model in models.items():
            profile = kernel_profile if args.device == "cuda" else matmul_profile
            extra[name].update(profile(model, optimizers[name], batches, args.part, args.precision))
    src_tokens = sum(int(b.src_mask.sum()) for b in batches)
    memory_rows = sum(b.src_mask.size(0) * int(b.src_mask.flatten(1).sum(1).max()) for b in batches)
    tgt_tokens = sum(int(b.labels.ne(IGNORE_INDEX).sum()) for b in batches)
    model_flops = None if args.part != "step" else sum(
        training_flops(next(iter(models.values())), b.src_mask, b.labels.ne(IGNORE_INDEX)) or 0 for b in batches)
    result = {
        "model": model_name, "case": case, "batches": len(batches),
        "real_src_tokens": src_tokens, "src_fill": round(src_tokens / sum(b.src_mask.numel() for b in batches), 3),
        "memory_fill": round(src_tokens / memory_rows, 3),
        "real_tgt_tokens": tgt_tokens, "tgt_fill": round(tgt_tokens / sum(b.labels.numel() for b in batches), 3),
        "model_gflop": None if model_flops is None else round(model_flops / 1e9, 2), **compiled,
    }
    for name in models:
        seconds = median(wall for wall, _ in times[name])
        result[name] = {"seconds": round(seconds, 4), "cpu_seconds": round(median(cpu for _, cpu in times[name]), 4),
                        "src_tokens_per_s": round(src_tokens / seconds, 1),
                        "tgt_tokens_per_s": round(tgt_tokens / seconds, 1), "gflop": round(gflop[name], 2),
                        "gflop_per_s": round(gflop[name] / seconds, 1),
                        "mfu": None if model_flops is None or peak is None else round(model_flops / seconds / peak, 4),
                        "share_of_roof": None if peak is None else round(gflop[name] * 1e9 / seconds / peak, 3),
                        **extra[name]}
    baseline, candidate = models
    result["speedup"] = round(result[baseline]["seconds"] / result[candidate]["seconds"], 3)
    result["flop_ratio"] = round(gflop[baseline] / gflop[candidate], 2)
    result["cpu_speedup"] = round(result[baseline]["cpu_seconds"] / result[candidate]["cpu_seconds"], 3)
    return result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["small", "paper"])
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--multinews", type=Path, default=MULTINEWS,
                        help="the Multi-News sample's folder (validation.jsonl) of case multinews")
    parser.add_argument("--multinews-batches", type=int, default=6, help="real batches timed in case multinews")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per implementation (median counts)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--precision", choices=tuple(PRECISIONS), default="32-true",
                        help="bf16-mixed: forward and loss under autocast to bfloat16 (Lightning's MixedPrecision)")
    parser.add_argument("--compile", action="store_true",
                        help="compare the packed model compiled against eager (instead of padded against packed)")
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="the device's peak TFLOP/s for MFU (default: measured on CPU, the data sheet on CUDA)")
    parser.add_argument("--part", choices=PARTS, default="step",
                        help="time the whole training step, or the encoder alone (forward, stand-in loss, backward)")
    parser.add_argument("--profile", action="store_true",
                        help="also profile one pass of each: on a CPU matmul_time_share and matmul_gflop_per_s; on CUDA"
                             " kernel_ms, gemm_time_share and top_kernels")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads (0: torch's default)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    kept = keep_freed_memory()  # as hiersum train does (hiersum.allocator)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device (torch.cuda.is_available() is False)")
    cases: dict[str, tuple[list[StepBatch], list[StepBatch]]] = {}  # timed batches, compile warm-up batches
    skipped = {}
    fill = None
    for case in args.cases:
        if case == "dense":
            cases[case] = (dense_batches(args.vocab),) * 2
        elif case == "ragged":
            cases[case] = (ragged_batches(args.vocab),) * 2
        elif not (args.multinews / "validation.jsonl").is_file():
            skipped[case] = f"{args.multinews} is absent"
        else:
            timed, epoch, fill = multinews_batches(args.vocab, args.multinews_batches, args.multinews)
            cases[case] = (timed, epoch)
    peak = peak_flops(args.device, PRECISIONS[args.precision], args.peak_tflops)
    print(json.dumps({"peak_gflop_per_s": None if peak is None else round(peak / 1e9, 1)}), file=sys.stderr)
    results = []
    for model_name in args.models:
        for case, (batches, epoch) in cases.items():
            results.append(run_case(args, model_name, case, batches, epoch, peak))
            print(json.dumps(results[-1]), file=sys.stderr)
    report = {
        "settings": {"part": args.part, "models": args.models, "vocab": args.vocab, "repeats": args.repeats,
                     "device": args.device, "precision": args.precision, "compile": args.compile,
                     "device_name": torch.cuda.get_device_name() if args.device == "cuda" else None,
                     "torch": torch.__version__, "threads": torch.get_num_threads(), "keep_freed_memory": kept,
                     "weights": "random (Xavier, seed 0)", "multinews_batches": args.multinews_batches,
                     "peak_gflop_per_s": None if peak is None else round(peak / 1e9, 1),
                     "peak": "the GPU's data-sheet peak" if args.device == "cuda" and args.peak_tflops is None
                     else "given" if args.peak_tflops is not None else "measured matrix-product roof"},
        "multinews_sample": fill,
        "skipped": skipped,
        "results": results,
        "speedups": {f"{r['model']}/{r['case']}": r["speedup"] for r in results},
        "mfu": {f"{r['model']}/{r['case']}/{name}": r[name]["mfu"] for r in results
                for name in (("eager", "compiled") if args.compile else ("padded", "packed"))},
        "cpu_speedups": {f"{r['model']}/{r['case']}": r["cpu_speedup"] for r in results},
        "flop_ratios": {f"{r['model']}/{r['case']}": r["flop_ratio"] for r in results},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
