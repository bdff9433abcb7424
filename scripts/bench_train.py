"""Training-step throughput of HierSum: the packed encoder (real tokens only) vs the padded-grid reference.

    python scripts/bench_train.py                                    # small and paper sizes, all cases, CPU
    python scripts/bench_train.py --models small --cases ragged --repeats 5
    python scripts/bench_train.py --device cuda
    python scripts/bench_train.py --models small --cases multinews --part encoder   # the encoder's share
    python scripts/bench_train.py --models small --cases multinews --profile        # where the time goes

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
not counted), ``gflop_per_s`` that over ``seconds``, and ``share_of_roof`` that over ``matmul_roof_gflop_per_s``,
the rate of one large fp32 matrix product (2048^3, best of 5) measured at the start of the run. ``flop_ratio``
(padded over packed ``gflop``) is the speedup packing gives when both implementations run at the same share of
the roof: ``speedup = flop_ratio x packed share / padded share``. ``peak_activation_mb``: the most memory the
tensors autograd saves for backward hold at once during the step (storages counted once, parameters excluded),
i.e. the step's memory beyond weights, gradients and Adam state; on CUDA, ``peak_memory_mb`` is
``torch.cuda.max_memory_allocated`` as well. ``memory_fill``: real tokens over the rows of the decoder memory
[B, M] (M = the most real tokens of an example of the batch). With ``--profile`` (CPU), one more pass of each
implementation under ``torch.profiler`` gives ``matmul_time_share`` (matrix products' share of its operator time)
and ``matmul_gflop_per_s`` (their rate).
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import median

import torch

from hiersum.config import DataConfig
from hiersum.data.batching import collate, make_token_budget_batches
from hiersum.data.corpus_splits import read_split
from hiersum.data.schema import IGNORE_INDEX, Batch
from hiersum.data.selection import encode_examples, selection_config
from hiersum.data.tokenizer import train_tokenizer
from hiersum.model import HierSum
from hiersum.model.flops import flop_counter, matmul_roof
from hiersum.training.module import label_smoothed_nll

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode import model_config  # noqa: E402  (same model sizes as the decoding benchmark)

ROOT = Path(__file__).resolve().parents[1]
MULTINEWS = ROOT.parent / "shared" / "data" / "multi-news-sample"
CASES = ("dense", "ragged", "multinews")
PAD, BOS, EOS = 0, 1, 2


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

    def to(self, device: torch.device) -> StepBatch:
        return StepBatch(*(t.to(device) for t in (self.src, self.src_mask, self.tgt_in, self.labels)))


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
    return StepBatch(src.masked_fill(~src_mask, PAD), src_mask, tgt_in, tgt[:, 1:].masked_fill(~real_tgt, IGNORE_INDEX))


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


def multinews_batches(vocab: int, count: int) -> tuple[list[StepBatch], dict]:
    """``count`` token-budget batches of the Multi-News sample, evenly spread over the size order,
    and the fill of the whole sample's batches."""
    data = replace(DataConfig(path=str(MULTINEWS), format="multinews"), max_paragraphs=24, max_paragraph_tokens=100,
                   max_target_tokens=256, selection="round_robin", title_paragraph=False, batch_tokens=16384,
                   max_batch_size=32)
    examples = read_split(MULTINEWS / "validation.jsonl", "multinews")
    texts = (text for e in examples for text in [*e.references, *(p for d in e.documents for p in d)] if text)
    tokenizer = train_tokenizer(texts, vocab_size=vocab)
    encoded = encode_examples(examples, tokenizer, selection_config(data))
    groups = make_token_budget_batches(encoded, batch_tokens=data.batch_tokens, max_batch_size=data.max_batch_size)
    ids = tokenizer.special
    batches = [collate([encoded[i] for i in group], pad_id=ids.pad, bos_id=ids.bos, eos_id=ids.eos) for group in groups]
    fill = {
        "examples": len(encoded), "batches": len(batches),
        "real_src_tokens": sum(int(b.src_mask.sum()) for b in batches),
        "grid_src_tokens": sum(b.src_mask.numel() for b in batches),
        "real_tgt_tokens": sum(int(b.tgt_mask.sum()) for b in batches),
        "grid_tgt_tokens": sum(b.tgt_mask.numel() for b in batches),
    }
    picked = sorted({round(i * (len(batches) - 1) / max(count - 1, 1)) for i in range(count)})
    return [step_batch(batches[i]) for i in picked], fill


def step_batch(batch: Batch) -> StepBatch:
    return StepBatch(batch.src, batch.src_mask, batch.tgt_in, batch.target_labels())


PARTS = ("step", "encoder")
"""``--part``: the whole training step, or the encoder alone (its forward, a stand-in loss, the backward)."""


def training_step(model: HierSum, optimizer: torch.optim.Optimizer, batch: StepBatch, part: str = "step") -> None:
    if part == "encoder":  # the encoder's share of a step: the loss stands in for the decoder's gradient
        loss = model.encode(batch.src, batch.src_mask).memory.square().mean()
    else:
        loss = label_smoothed_nll(model.logits(batch.src, batch.src_mask, batch.tgt_in), batch.labels, 0.1)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


def peak_activation_bytes(model: HierSum, optimizer: torch.optim.Optimizer, batch: StepBatch, part: str) -> int:
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
        training_step(model, optimizer, batch, part)
    return peak


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA); nothing to wait for on CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize()


MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::bmm")


def matmul_profile(
    model: HierSum, optimizer: torch.optim.Optimizer, batches: list[StepBatch], part: str
) -> dict[str, float]:
    """One pass under ``torch.profiler`` (CPU): the share of the pass's operator time spent in matrix products
    (``MATMUL_OPS``, self time) and the GFLOP/s they run at, which ``share_of_roof`` cannot tell apart from
    the time the step spends elsewhere (element-wise work, softmaxes, LayerNorms, index copies, Adam)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_flops=True) as profiler:
        for batch in batches:
            training_step(model, optimizer, batch, part)
    events = profiler.key_averages()
    total_us = sum(event.self_cpu_time_total for event in events)
    matmul_us = sum(event.self_cpu_time_total for event in events if event.key in MATMUL_OPS)
    matmul_flops = sum(event.flops for event in events if event.key in MATMUL_OPS)
    return {"matmul_time_share": round(matmul_us / total_us, 3),
            "matmul_gflop_per_s": round(matmul_flops / matmul_us / 1e3, 1)}


def timed_pass(
    model: HierSum, optimizer: torch.optim.Optimizer, batches: list[StepBatch], device: torch.device, part: str
) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one pass over ``batches``."""
    synchronize(device)
    start, cpu_start = time.perf_counter(), time.process_time()
    for batch in batches:
        training_step(model, optimizer, batch, part)
    synchronize(device)
    return time.perf_counter() - start, time.process_time() - cpu_start


def run_case(
    args: argparse.Namespace, model_name: str, case: str, batches: list[StepBatch], roof_gflop_per_s: float
) -> dict:
    device = torch.device(args.device)
    torch.manual_seed(0)
    packed = HierSum(model_config(model_name), vocab_size=args.vocab, pad_id=PAD, bos_id=BOS, eos_id=EOS)
    padded = copy.deepcopy(packed)
    padded.encoder.packed = False
    models = {"padded": padded.train().to(device), "packed": packed.train().to(device)}
    optimizers = {name: torch.optim.Adam(m.parameters(), lr=1e-4, betas=(0.9, 0.998), eps=1e-9)
                  for name, m in models.items()}
    batches = [b.to(device) for b in batches]
    extra, gflop = {}, {}  # per implementation: memory (and profile) figures, GFLOP of one pass
    for name, model in models.items():
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
        with flop_counter() as counter:  # also the warm-up
            activation = max(peak_activation_bytes(model, optimizers[name], b, args.part) for b in batches)
        extra[name] = {"peak_activation_mb": round(activation / 2**20, 1)}
        gflop[name] = counter.get_total_flops() / 1e9
        if device.type == "cuda":
            extra[name]["peak_memory_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in models}
    for _ in range(args.repeats):
        for name, model in models.items():
            times[name].append(timed_pass(model, optimizers[name], batches, device, args.part))
    if args.profile:
        for name, model in models.items():
            extra[name].update(matmul_profile(model, optimizers[name], batches, args.part))
    src_tokens = sum(int(b.src_mask.sum()) for b in batches)
    memory_rows = sum(b.src_mask.size(0) * int(b.src_mask.flatten(1).sum(1).max()) for b in batches)
    tgt_tokens = sum(int(b.labels.ne(IGNORE_INDEX).sum()) for b in batches)
    result = {
        "model": model_name, "case": case, "batches": len(batches),
        "real_src_tokens": src_tokens, "src_fill": round(src_tokens / sum(b.src_mask.numel() for b in batches), 3),
        "memory_fill": round(src_tokens / memory_rows, 3),
        "real_tgt_tokens": tgt_tokens, "tgt_fill": round(tgt_tokens / sum(b.labels.numel() for b in batches), 3),
    }
    for name in models:
        seconds = median(wall for wall, _ in times[name])
        result[name] = {"seconds": round(seconds, 4), "cpu_seconds": round(median(cpu for _, cpu in times[name]), 4),
                        "src_tokens_per_s": round(src_tokens / seconds, 1),
                        "tgt_tokens_per_s": round(tgt_tokens / seconds, 1), "gflop": round(gflop[name], 2),
                        "gflop_per_s": round(gflop[name] / seconds, 1),
                        "share_of_roof": round(gflop[name] / seconds / roof_gflop_per_s, 3), **extra[name]}
    result["speedup"] = round(result["padded"]["seconds"] / result["packed"]["seconds"], 2)
    result["flop_ratio"] = round(gflop["padded"] / gflop["packed"], 2)
    result["cpu_speedup"] = round(result["padded"]["cpu_seconds"] / result["packed"]["cpu_seconds"], 2)
    return result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["small", "paper"])
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--multinews-batches", type=int, default=6, help="real batches timed in case multinews")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per implementation (median counts)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--part", choices=PARTS, default="step",
                        help="time the whole training step, or the encoder alone (forward, stand-in loss, backward)")
    parser.add_argument("--profile", action="store_true",
                        help="also profile one pass of each (CPU): matmul_time_share, matmul_gflop_per_s")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads (0: torch's default)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.profile and args.device != "cpu":
        raise SystemExit("--profile reads CPU operator times: use it with --device cpu")
    if args.threads:
        torch.set_num_threads(args.threads)
    cases: dict[str, list[StepBatch]] = {}
    skipped = {}
    fill = None
    for case in args.cases:
        if case == "dense":
            cases[case] = dense_batches(args.vocab)
        elif case == "ragged":
            cases[case] = ragged_batches(args.vocab)
        elif not (MULTINEWS / "validation.jsonl").is_file():
            skipped[case] = f"{MULTINEWS} is absent"
        else:
            cases[case], fill = multinews_batches(args.vocab, args.multinews_batches)
    roof = matmul_roof(torch.device(args.device))
    print(json.dumps({"matmul_roof_gflop_per_s": round(roof, 1)}), file=sys.stderr)
    results = []
    for model_name in args.models:
        for case, batches in cases.items():
            results.append(run_case(args, model_name, case, batches, roof))
            print(json.dumps(results[-1]), file=sys.stderr)
    report = {
        "settings": {"part": args.part, "models": args.models, "vocab": args.vocab, "repeats": args.repeats,
                     "device": args.device,
                     "torch": torch.__version__, "threads": torch.get_num_threads(),
                     "weights": "random (Xavier, seed 0)", "multinews_batches": args.multinews_batches,
                     "matmul_roof_gflop_per_s": round(roof, 1)},
        "multinews_sample": fill,
        "skipped": skipped,
        "results": results,
        "speedups": {f"{r['model']}/{r['case']}": r["speedup"] for r in results},
        "cpu_speedups": {f"{r['model']}/{r['case']}": r["cpu_speedup"] for r in results},
        "flop_ratios": {f"{r['model']}/{r['case']}": r["flop_ratio"] for r in results},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
