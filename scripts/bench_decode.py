"""Decoding throughput of HierSum: greedy and beam search, with and without the decoder cache.

    python scripts/bench_decode.py                          # small and paper sizes, CPU
    python scripts/bench_decode.py --models small --repeats 5
    python scripts/bench_decode.py --device cuda --precision bf16 --compile
    python scripts/bench_decode.py --models small --searches beam --no-uncached --pairs 5 \
        --against "PYTHONPATH=../base python scripts/bench_decode.py --models small --searches beam --no-uncached"

(the last: this script timing the code of another checkout, ``../base``, against this one's)

Prints one JSON object. The weights are random (Xavier initialisation, seed 0): decoding is
forced to exactly ``--steps`` tokens (min_length = max_length = steps, EOS never allowed before),
so the work does not depend on what the weights predict. Each timed call decodes one batch of
``--batch`` examples x ``--paragraphs`` paragraphs x ``--tokens`` tokens, encoder included.

"tokens_per_s" counts the tokens of the returned summaries (batch x steps) per second; the beams
explored besides are in "beam_tokens_per_s" (batch x beam x steps). Without the cache, every
step runs the decoder over the whole prefix again (the memory keys/values are still projected
once). Each case runs in its own process, so "peak_memory_mb" (maxrss on CPU,
torch.cuda.max_memory_allocated on GPU) is that case's own.

``--compile`` adds, for every cached case, the compiled step (``decode.compile_step``) timed in the same
process as eager, their calls alternated: "compiled_tokens_per_s", "compiled_speedup" (eager / compiled
time, best of each) and "compile_seconds" (the first compiled call less a timed one: the compilation).
``--precision bf16`` decodes under bf16 autocast (as ``hiersum summarize precision=bf16``).

"gflop" is the work of one timed call (matrix products and attention, counted by
``torch.utils.flop_counter.FlopCounterMode`` over one more eager call, as bench_train counts a training
step), "gflop_per_s" that work over the best time, and "mfu" that rate over the device's peak for the
precision (:func:`hiersum.model.flops.peak_flops`: the measured matrix-product roof on a CPU, the data
sheet's on a GPU; null for a GPU it does not know). Decoding is bound by memory traffic, not by products, so
its MFU is far below a training step's.

``--against CMD --pairs N`` measures a ratio on a noisy machine: it runs CMD (a shell command printing
this script's JSON, e.g. this script in a checkout of another commit, or a JSON object with a top-level
"tokens_per_s", e.g. a wrapper around another implementation) and this benchmark alternately, each in its
own processes, N pairs (CMD first), and reports per case the ratio of tokens/s (ours / CMD's) of every
pair and their median.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from statistics import median

import torch
from omegaconf import OmegaConf

from hiersum.config import ModelConfig
from hiersum.decoding.generation import GenerationOptions, generate
from hiersum.inference.precision import autocast
from hiersum.model import HierSum

CONF = Path(__file__).resolve().parents[1] / "conf" / "model"
SEARCHES = ("greedy", "beam")
PRECISIONS = {"fp32": "32", "bf16": "bf16"}
"""``--precision`` -> the ``precision`` of :func:`hiersum.inference.precision.autocast`."""


def model_config(name: str) -> ModelConfig:
    """``small``: d 256, 4 heads, ff 1024, 4 encoder layers with inter layers [2, 3], 2 decoder layers (the
    ModelConfig defaults when docs/benchmarks.md was measured); otherwise ``conf/model/<name>.yaml``
    (a preset that extends ``schema`` only: the ModelConfig defaults are those of ``model=small``)."""
    if name == "small":
        return ModelConfig(d_model=256, ff_size=1024, dropout=0.0)
    values = OmegaConf.to_container(OmegaConf.load(CONF / f"{name}.yaml"))
    values.pop("defaults", None)
    return replace(ModelConfig(**values), dropout=0.0)


@torch.inference_mode()
def run_case(args: argparse.Namespace, model_name: str, search: str, cache: bool) -> dict:
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    model = HierSum(model_config(model_name), vocab_size=args.vocab, pad_id=0, bos_id=1, eos_id=2)
    model = model.eval().to(device)
    src = torch.randint(3, args.vocab, (args.batch, args.paragraphs, args.tokens), device=device)  # (B, P, T)
    mask = torch.ones_like(src, dtype=torch.bool)
    beam = 1 if search == "greedy" else args.beam
    options = dict(beam_size=beam, greedy=search == "greedy", stopping="full")

    if args.compile and args.compile_mode:
        model.compile_step(mode=None if args.compile_mode == "default" else args.compile_mode)
    last_sequences: dict[bool, list] = {}  # eager's and the compiled step's, of the last call

    def decode(steps: int, *, compiled: bool = False) -> float:
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        compile_flag = {"compile_step": True} if compiled else {}  # absent before: this script times older commits
        options_at = GenerationOptions(min_length=steps, max_length=steps, **compile_flag, **options)
        with autocast(device, PRECISIONS[args.precision]):
            out = generate(model, src, mask, options_at, use_cache=cache)
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        assert all(len(sequence) == steps for sequence in out.sequences)
        last_sequences[compiled] = out.sequences
        return seconds

    decode(2)  # warm-up
    compiling = args.compile and cache
    first_compiled = decode(args.steps, compiled=True) if compiling else 0.0  # compiles the step
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times, compiled_times = [], []
    for _ in range(args.repeats):  # eager and compiled calls alternated: both see the same machine
        times.append(decode(args.steps))
        if compiling:
            compiled_times.append(decode(args.steps, compiled=True))
    if device.type == "cuda":
        peak_mb = torch.cuda.max_memory_allocated() / 2**20
    else:
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    result = {
        "model": model_name, "search": search, "beam": beam, "cache": cache, "precision": args.precision,
        **timing(times, args, beam), "peak_memory_mb": round(peak_mb, 1),
    }
    result.update(work_rate(lambda: decode(args.steps), min(times), device, args.precision))
    if compiling:
        compiled = timing(compiled_times, args, beam)
        result.update({f"compiled_{key}": value for key, value in compiled.items()})
        result["compiled_speedup"] = round(min(times) / min(compiled_times), 3)
        result["compile_seconds"] = round(first_compiled - median(compiled_times), 2)
        result["compiled_same_tokens"] = last_sequences[True] == last_sequences[False]
    return result


def work_rate(decode_once, best: float, device: torch.device, precision: str) -> dict:
    """"gflop", "gflop_per_s" and "mfu" of a call that took ``best`` seconds at best (module docstring)."""
    try:
        from hiersum.model.flops import flop_counter, peak_flops
    except ImportError:  # a checkout from before the FLOP counter (--against times older commits)
        return {}
    with flop_counter() as counter:
        decode_once()
    flops = counter.get_total_flops()
    peak = peak_flops(device, torch.bfloat16 if precision == "bf16" else torch.float32)
    return {"gflop": float(f"{flops / 1e9:.4g}"), "gflop_per_s": float(f"{flops / best / 1e9:.4g}"),
            "mfu": None if peak is None else float(f"{flops / best / peak:.4g}")}


def timing(times: list[float], args: argparse.Namespace, beam: int) -> dict:
    """The figures of timed calls (the best one counts for the rates)."""
    best = min(times)
    return {
        "seconds_best": round(best, 4), "seconds_median": round(median(times), 4),
        "tokens_per_s": round(args.batch * args.steps / best, 1),
        "beam_tokens_per_s": round(args.batch * beam * args.steps / best, 1),
        "examples_per_s": round(args.batch / best, 3),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["small", "paper"])
    parser.add_argument("--searches", nargs="+", choices=SEARCHES, default=list(SEARCHES))
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--paragraphs", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per case (the best one counts)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", choices=sorted(PRECISIONS), default="fp32",
                        help="fp32, or bf16 autocast (as hiersum summarize precision=bf16)")
    parser.add_argument("--compile", action="store_true",
                        help="also time the compiled step (decode.compile_step) beside eager, in the same process")
    parser.add_argument("--compile-mode", choices=("default", "reduce-overhead"),
                        help="with --compile: torch.compile's mode for the step (default: the model's choice, "
                        "reduce-overhead on CUDA)")
    parser.add_argument("--against", metavar="CMD",
                        help="a shell command printing this script's JSON (or {'tokens_per_s': ...}) to compare with")
    parser.add_argument("--pairs", type=int, default=5, help="with --against: alternating pairs (CMD first)")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--no-uncached", action="store_true", help="skip the cases without the cache")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # model:search:cache, run in a child process
    return parser.parse_args(argv)


def run_cases(args: argparse.Namespace, forwarded: list[str]) -> dict:
    """Every case in its own process; the report (settings, results, cache speed-ups)."""
    results = []
    for model_name in args.models:
        for search in args.searches:
            for cache in ("cache",) if args.no_uncached else ("cache", "nocache"):
                child = subprocess.run(
                    [sys.executable, __file__, *forwarded, "--case", f"{model_name}:{search}:{cache}"],
                    capture_output=True, text=True, check=True,
                )
                results.append(json.loads(child.stdout.strip().splitlines()[-1]))
                print(json.dumps(results[-1]), file=sys.stderr)
    speedups = {
        f"{r['model']}/{r['search']}": round(u["seconds_best"] / r["seconds_best"], 2)
        for r in results if r["cache"]
        for u in results if not u["cache"] and (u["model"], u["search"]) == (r["model"], r["search"])
    }
    settings = {k: getattr(args, k) for k in ("batch", "paragraphs", "tokens", "vocab", "beam", "steps", "repeats",
                                              "device", "precision", "compile", "compile_mode")}
    return {
        "settings": {**settings, "torch": torch.__version__, "threads": args.threads or torch.get_num_threads(),
                     "weights": "random (Xavier, seed 0)"},
        "results": results,
        "cache_speedup": speedups,
    }


def case_rates(report: dict) -> dict[str, float]:
    """tokens/s per case name (``model/search/cache``, ``.../compiled`` for the compiled step), or ``{"*": x}``
    for a report that has only a top-level "tokens_per_s"."""
    if "results" not in report:
        return {"*": float(report["tokens_per_s"])}
    rates = {}
    for r in report["results"]:
        name = f"{r['model']}/{r['search']}/{'cache' if r['cache'] else 'nocache'}"
        rates[name] = r["tokens_per_s"]
        if "compiled_tokens_per_s" in r:
            rates[f"{name}/compiled"] = r["compiled_tokens_per_s"]
    return rates


def alternate(args: argparse.Namespace, forwarded: list[str]) -> dict:
    """``--against``: CMD and this benchmark alternately, ``--pairs`` times; ratios ours / CMD's per case."""
    pairs = []
    for i in range(args.pairs):
        theirs = json.loads(subprocess.run(args.against, shell=True, capture_output=True, text=True,
                                           check=True).stdout)
        ours = run_cases(args, forwarded)
        rates, their_rates = case_rates(ours), case_rates(theirs)
        ratios = {name: round(rate / their_rates.get(name, their_rates.get("*", float("nan"))), 3)
                  for name, rate in rates.items()}
        pairs.append({"ours": rates, "theirs": their_rates, "ratio": ratios})
        print(json.dumps({"pair": i + 1, **pairs[-1]}), file=sys.stderr)
    names = [name for name in pairs[0]["ratio"] if all(name in p["ratio"] for p in pairs)]
    return {
        "settings": ours["settings"], "against": args.against, "pairs": pairs,
        "median_ratio": {name: round(median(p["ratio"][name] for p in pairs), 3) for name in names},
    }


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.case:
        model_name, search, cache = args.case.split(":")
        print(json.dumps(run_case(args, model_name, search, cache == "cache")))
        return
    forwarded = strip_options(argv if argv is not None else sys.argv[1:], ("--case", "--against", "--pairs"))
    report = alternate(args, forwarded) if args.against else run_cases(args, forwarded)
    print(json.dumps(report, indent=2))


def strip_options(argv: list[str], names: tuple[str, ...]) -> list[str]:
    """``argv`` without the options ``names`` and their values (``--name value`` or ``--name=value``)."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in names:
            skip = True
        elif not arg.startswith(tuple(f"{name}=" for name in names)):
            kept.append(arg)
    return kept


if __name__ == "__main__":
    main()
