"""Decoding throughput of HierSum: greedy and beam search, with and without the decoder cache.

    python scripts/bench_decode.py                          # small and paper sizes, CPU
    python scripts/bench_decode.py --models small --repeats 5
    python scripts/bench_decode.py --device cuda

Prints one JSON object. The weights are random (Xavier initialisation, seed 0): decoding is
forced to exactly ``--steps`` tokens (min_length = max_length = steps, EOS never allowed before),
so the work does not depend on what the weights predict. Each timed call decodes one batch of
``--batch`` examples x ``--paragraphs`` paragraphs x ``--tokens`` tokens, encoder included.

"tokens_per_s" counts the tokens of the returned summaries (batch x steps) per second; the beams
explored besides are in "beam_tokens_per_s" (batch x beam x steps). Without the cache, every
step runs the decoder over the whole prefix again (the memory keys/values are still projected
once). Each case runs in its own process, so "peak_memory_mb" (maxrss on CPU,
torch.cuda.max_memory_allocated on GPU) is that case's own.
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
from hiersum.model import HierSum

CONF = Path(__file__).resolve().parents[1] / "conf" / "model"
SEARCHES = ("greedy", "beam")


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

    def decode(steps: int) -> float:
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        options_at = GenerationOptions(min_length=steps, max_length=steps, **options)
        out = generate(model, src, mask, options_at, use_cache=cache)
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        assert all(len(sequence) == steps for sequence in out.sequences)
        return seconds

    decode(2)  # warm-up
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times = [decode(args.steps) for _ in range(args.repeats)]
    best = min(times)
    if device.type == "cuda":
        peak_mb = torch.cuda.max_memory_allocated() / 2**20
    else:
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {
        "model": model_name, "search": search, "beam": beam, "cache": cache,
        "seconds_best": round(best, 4), "seconds_median": round(median(times), 4),
        "tokens_per_s": round(args.batch * args.steps / best, 1),
        "beam_tokens_per_s": round(args.batch * beam * args.steps / best, 1),
        "examples_per_s": round(args.batch / best, 3),
        "peak_memory_mb": round(peak_mb, 1),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["small", "paper"])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--paragraphs", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per case (the best one counts)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--no-uncached", action="store_true", help="skip the cases without the cache")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # model:search:cache, run in a child process
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.case:
        model_name, search, cache = args.case.split(":")
        print(json.dumps(run_case(args, model_name, search, cache == "cache")))
        return
    forwarded = [a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("--case")]
    results = []
    for model_name in args.models:
        for search in SEARCHES:
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
    settings = {k: getattr(args, k) for k in ("batch", "paragraphs", "tokens", "vocab", "beam", "steps", "repeats")}
    report = {
        "settings": {**settings, "device": args.device, "torch": torch.__version__,
                     "threads": args.threads or torch.get_num_threads(), "weights": "random (Xavier, seed 0)"},
        "results": results,
        "cache_speedup": speedups,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
