"""Cost against input length: one training step and one summary of a record of P paragraphs x T tokens, from
1,000 to 1,000,000 source tokens, for the hierarchical model and the flat baseline (as far as its position table
goes).

    python scripts/bench_length.py                                        # both models, both parts, CPU
    python scripts/bench_length.py --parts summarize --paragraphs 10 100 1000 10000
    python scripts/bench_length.py --models hierarchical --copy           # with model.copy_attention
    python scripts/bench_length.py --device cuda

Prints one JSON object. The model is ``model=small`` (``conf/model/small.yaml``: the ModelConfig defaults) with
random weights (seed 0, dropout 0) and a vocabulary of ``--vocab``; the record is one example of P paragraphs of
T tokens, every token real (the flat model reads the same P x T tokens as one sequence). ``summarize``: the
encoder and beam search (``--beam`` 4), forced to exactly ``--steps`` tokens (80; min_length = max_length), as
``hiersum summarize`` decodes. ``train``: forward, label-smoothed NLL (0.1) of a ``--target``-token summary,
backward and an Adam step, as ``HierSumModule`` trains (``--activation-checkpointing``: as
``activation_checkpointing=true`` trains; the flat model, which has no such option, trains without).

Each case (model, part, size) runs in its own process, one warm-up call then ``--repeats`` timed ones:
``seconds`` is their median, ``peak_memory_mb`` the process's peak over those calls (maxrss on a CPU, the weights
and the interpreter included; ``torch.cuda.max_memory_allocated`` on CUDA), read before the FLOPs are counted
(one more call, whose counting mode keeps more tensors alive: it doubled a training step's peak).
A size past the flat model's position table
records its one-line error as ``limit``; a case whose process dies (out of memory: ``--memory-limit-gb`` caps the
process's address space, 20 GB by default on this 24 GB machine) records ``failed``; the larger sizes of that
model and part are not tried. ``exponents``: per model and part, the slope of the least-squares line through
(log source tokens, log seconds) and through (log source tokens, log peak memory) over the sizes that ran; 1 is
linear. ``flop_exponent`` fits the FLOPs of each call (``torch.utils.flop_counter``: matrix products and
attention), which the machine's load does not move.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from dataclasses import replace
from statistics import median

import torch

from hiersum.config import ModelConfig
from hiersum.decoding.generation import GenerationOptions, generate
from hiersum.model import HierSum
from hiersum.model.flops import flop_counter
from hiersum.training.module import label_smoothed_nll

MODELS = ("hierarchical", "flat")
PARTS = ("summarize", "train")
DEFAULT_PARAGRAPHS = (10, 30, 100, 300, 1000, 3000, 10000)
"""x 100 tokens: 1,000 to 1,000,000 source tokens."""


def model_config(name: str, args: argparse.Namespace) -> ModelConfig:
    """``model=small`` (the ModelConfig defaults) with ``encoder=name``; the flat model has no inter-paragraph
    layers. Its position table holds ``--max-positions`` entries (the default's 5000)."""
    config = ModelConfig(dropout=0.0, copy_attention=args.copy, max_positions=args.max_positions)
    if name == "flat":
        return replace(config, encoder="flat", inter_layers=[], graph="none", pooling_penalty=0.0)
    return config


def inputs(name: str, paragraphs: int, args: argparse.Namespace, device: torch.device):
    """src and its mask: [1, P, T] for the hierarchical model, [1, P*T] for the flat one (all real tokens)."""
    generator = torch.Generator().manual_seed(0)
    src = torch.randint(3, args.vocab, (1, paragraphs, args.tokens), generator=generator)
    if name == "flat":
        src = src.view(1, -1)
    return src.to(device), torch.ones_like(src, dtype=torch.bool, device=device)


def run_case(args: argparse.Namespace, name: str, part: str, paragraphs: int) -> dict:
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    model = HierSum(model_config(name, args), vocab_size=args.vocab, pad_id=0, bos_id=1, eos_id=2).to(device)
    src, mask = inputs(name, paragraphs, args, device)
    if part == "summarize":
        model.eval()
        options = GenerationOptions(beam_size=args.beam, min_length=args.steps, max_length=args.steps,
                                    stopping="full")

        @torch.inference_mode()
        def call() -> None:
            generate(model, src, mask, options)
    else:
        model.train()
        if args.activation_checkpointing and name != "flat":
            model.recompute_encoder()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
        tgt = torch.randint(3, args.vocab, (1, args.target + 1), generator=torch.Generator().manual_seed(1))
        tgt[0, 0] = 1
        tgt_in, labels = tgt[:, :-1].to(device), tgt[:, 1:].to(device)

        def call() -> None:
            loss = label_smoothed_nll(model(src, mask, tgt_in).logits, labels, 0.1)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

    try:
        call()  # warm-up (and the flat model's limit)
    except ValueError as error:
        return {"limit": str(error)}
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        call()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    if device.type == "cuda":
        peak_mb = torch.cuda.max_memory_allocated() / 2**20
    else:
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    with flop_counter() as counter:  # after the peak is read: under its dispatch mode a call keeps more alive
        call()
    return {"seconds": round(median(times), 4), "peak_memory_mb": round(peak_mb, 1),
            "gflop": float(f"{counter.get_total_flops() / 1e9:.5g}")}


def slope(xs: list[float], ys: list[float]) -> float | None:
    """The least-squares slope of log y against log x (None below two points)."""
    if len(xs) < 2:
        return None
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return round(sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True))
                 / sum((a - mx) ** 2 for a in lx), 3)


def exponents(results: list[dict]) -> dict:
    """Per ``model/part``: the log-log slopes of seconds, peak memory and FLOPs against source tokens."""
    fits = {}
    for name in MODELS:
        for part in PARTS:
            ran = [r for r in results if (r["model"], r["part"]) == (name, part) and "seconds" in r]
            tokens = [r["source_tokens"] for r in ran]
            fits[f"{name}/{part}"] = {
                "time_exponent": slope(tokens, [r["seconds"] for r in ran]),
                "memory_exponent": slope(tokens, [r["peak_memory_mb"] for r in ran]),
                "flop_exponent": slope(tokens, [r["gflop"] for r in ran]),
                "largest_source_tokens": max(tokens, default=None),
            }
    return fits


def child_command(args: argparse.Namespace, case: str) -> list[str]:
    forwarded = ["--tokens", str(args.tokens), "--vocab", str(args.vocab), "--beam", str(args.beam),
                 "--steps", str(args.steps), "--target", str(args.target), "--repeats", str(args.repeats),
                 "--device", args.device, "--max-positions", str(args.max_positions)]
    forwarded += ["--copy"] if args.copy else []
    forwarded += ["--activation-checkpointing"] if args.activation_checkpointing else []
    forwarded += ["--threads", str(args.threads)] if args.threads else []
    return [sys.executable, __file__, *forwarded, "--case", case]


def limit_memory(gigabytes: float) -> None:
    """Cap this process's address space (a case past it fails with MemoryError instead of swapping)."""
    cap = int(gigabytes * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def run_cases(args: argparse.Namespace) -> dict:
    results = []
    for name in args.models:
        for part in args.parts:
            for paragraphs in sorted(args.paragraphs):
                case = {"model": name, "part": part, "paragraphs": paragraphs, "tokens": args.tokens,
                        "source_tokens": paragraphs * args.tokens}
                child = subprocess.run(
                    child_command(args, f"{name}:{part}:{paragraphs}"), capture_output=True, text=True,
                    preexec_fn=(lambda: limit_memory(args.memory_limit_gb)) if args.device == "cpu" else None,
                )
                if child.returncode == 0:
                    case.update(json.loads(child.stdout.strip().splitlines()[-1]))
                else:
                    case["failed"] = (child.stderr.strip().splitlines() or [f"exit status {child.returncode}"])[-1]
                results.append(case)
                print(json.dumps(case), file=sys.stderr, flush=True)
                if "seconds" not in case:
                    break  # the larger sizes would fail too
    settings = {key: getattr(args, key) for key in ("tokens", "vocab", "beam", "steps", "target", "repeats", "device",
                                                     "copy", "max_positions", "memory_limit_gb")}
    return {"settings": {**settings, "model": "small (ModelConfig defaults), random weights (seed 0)",
                         "torch": torch.__version__, "threads": args.threads or torch.get_num_threads()},
            "results": results, "exponents": exponents(results)}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--paragraphs", nargs="+", type=int, default=list(DEFAULT_PARAGRAPHS),
                        help="paragraph counts, each a record of P x --tokens source tokens")
    parser.add_argument("--tokens", type=int, default=100, help="tokens per paragraph")
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--steps", type=int, default=80, help="summary tokens (min_length = max_length)")
    parser.add_argument("--target", type=int, default=64, help="target tokens of a training step")
    parser.add_argument("--repeats", type=int, default=2, help="timed calls per case (the median counts)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--copy", action="store_true", help="model.copy_attention=true")
    parser.add_argument("--activation-checkpointing", action="store_true",
                        help="train: the encoder recomputes its activations (activation_checkpointing=true)")
    parser.add_argument("--max-positions", type=int, default=ModelConfig().max_positions)
    parser.add_argument("--memory-limit-gb", type=float, default=20.0, help="the address space of a case (CPU)")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # model:part:paragraphs, run in a child process
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.case:
        name, part, paragraphs = args.case.split(":")
        print(json.dumps(run_case(args, name, part, int(paragraphs))))
        return
    print(json.dumps(run_cases(args), indent=2))


if __name__ == "__main__":
    main()
