"""Cost against input length: one training step and one summary of a record of P paragraphs x T tokens, from
1,000 to 1,000,000 source tokens, for the hierarchical model and the flat baseline (as far as its position table
goes), and the official code (nlpyang/hiersumm) through the peer harness where it runs.

    python scripts/bench_length.py                                        # both models (+ official), both parts
    python scripts/bench_length.py --parts summarize --paragraphs 10 100 1000 10000
    python scripts/bench_length.py --models hierarchical --copy           # with model.copy_attention
    python scripts/bench_length.py --device cuda
    python scripts/bench_length.py --models hierarchical official        # the peer under this Python

Prints one JSON object. The model is ``model=small`` (``conf/model/small.yaml``: the ModelConfig defaults) with
random weights (seed 0, dropout 0) and a vocabulary of ``--vocab``; the record is one example of P paragraphs of
T tokens, every token real (the flat model reads the same P x T tokens as one sequence). ``summarize``: the
encoder and beam search (``--beam`` 4), forced to exactly ``--steps`` tokens (80; min_length = max_length), as
``hiersum summarize`` decodes. ``train``: forward, label-smoothed NLL (0.1) of a ``--target``-token summary,
backward and an Adam step, as ``HierSumModule`` trains (``--activation-checkpointing``: as
``activation_checkpointing=true`` trains; the flat model, which has no such option, trains without).

Each case (model, part, size) runs in its own process, one warm-up call then ``--repeats`` timed ones: ``seconds``
is their median, ``peak_memory_mb`` the process's peak over those calls (maxrss on a CPU, the weights and the
interpreter included; ``torch.cuda.max_memory_allocated`` on CUDA), read before the FLOPs are counted (one more
call, whose counting mode keeps more tensors alive: it doubled a training step's peak; where that call runs out of
memory, the case keeps its time and peak with ``gflop`` null and ``flop_count_failed``). A size past the flat
model's position table records its one-line error as ``limit`` (the encoder's own, known without starting the case's
process); a case whose process dies (out of memory: ``--memory-limit-gb`` caps the process's address space, 20 GB by
default on this 24 GB machine) records ``failed``; the larger sizes of that model and part are not tried.
``exponents``: per model and part, the slope of the least-squares line through (log source tokens, log seconds) and
through (log source tokens, log peak memory) over the sizes that ran; 1 is linear. ``flop_exponent`` fits the FLOPs
of each call (``torch.utils.flop_counter``: matrix products and attention), which the machine's load does not move.

``--models official``: the official hiersumm model (Liu & Lapata 2019, nlpyang/hiersumm) in hierarchical mode, run
by the peer harness ``harness.py`` of ``--peer-dir`` (``../shared/peers/hiersumm`` beside the checkout; its README
says how to set it up) under ``--official-python``, else ``HIERSUMM_PYTHON``, else this script's own Python (the
official code needs only torch and numpy, which the project's venv has from its lock; the harness stubs
tensorboardX), each case a process of
``scripts/bench_length_official.py``, which imports the harness; the harness extracts the official code from its git
mirror (``HIERSUMM_MIRROR``). It is part of the default models only where it runs; asked for where it does not, the
script exits with one line saying what to set up. Same sizes as ``model=small``: d 128, 4 heads, ff 256, 4 encoder
layers of which 2 and 3 inter-paragraph (4 pooling heads), 2 decoder layers, dropout 0, vocabulary ``--vocab``,
random weights (the harness's seeded xavier init), one example of P x T real tokens. It differs from hiersum's model
where the official code does (the harness's own ``small`` config is wider, d 256 and ff 1024, and is not used): the
official decoder keeps a 5000 x 5000 causal mask per layer (its ~670 MB base RSS against hiersum's ~500 MB), its
beam search tiles the encoder memory for each hypothesis, and its ids are the official vocabulary's (pad 6, BOS 4).
``summarize``: the official ``Translator._fast_translate_batch`` (``H.bench_decode``) at ``--beam`` with EOS
disabled, exactly ``--steps`` steps, length penalty alpha 0.6 as hiersum's; ``train``: the harness's training step
(``H.bench_train``: the official Trainer, sharded label-smoothed loss of a ``--target``-token summary, its Adam/noam
optimizer). The official code runs on the CPU only (with ``--device cuda`` its cases record ``limit``) and has no
copy attention or activation checkpointing. Its position table has 5,000 entries, for the paragraph positions too:
past 5,000 paragraphs a case records the error as ``limit``. The ``settings.official`` entry names its Python, torch
and commit.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from statistics import median

import torch

from hiersum.allocator import keep_freed_memory
from hiersum.config import ModelConfig
from hiersum.decoding.generation import GenerationOptions, generate
from hiersum.model import HierSum
from hiersum.model.encoder import flat_source_limit
from hiersum.model.flops import flop_counter
from hiersum.training.loss import label_smoothed_nll

MODELS = ("hierarchical", "flat", "official")
OFFICIAL_DRIVER = Path(__file__).resolve().with_name("bench_length_official.py")
PEER_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "peers" / "hiersumm"
"""``../shared/peers/hiersumm`` beside the checkout: the peer harness of the official code."""
PEER_SETUP = ("the peer needs ../shared/peers/hiersumm beside the checkout (--peer-dir elsewhere) and a git mirror of "
              "nlpyang/hiersumm (HIERSUMM_MIRROR, else the harness's default path; README.md there); any Python with "
              "torch and numpy runs it (--official-python or HIERSUMM_PYTHON; default: this one)")
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


def run_case(args: argparse.Namespace, name: str, part: str, paragraphs: int) -> tuple[dict, Callable[[], None]]:
    """One case's median time and peak memory, and its call (a flat size past the table is no case:
    :func:`run_cases` records its limit)."""
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

    call()  # warm-up
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
    return {"seconds": round(median(times), 4), "peak_memory_mb": round(peak_mb, 1)}, call


def count_gflop(call: Callable[[], None]) -> float | None:
    """One more call under the FLOP counter, after the case's time and peak are printed: its dispatch mode keeps
    more tensors alive (it doubled a training step's peak), so at the largest sizes it may run out of memory where
    the timed calls did not; then None (and a killed process keeps the printed time and peak)."""
    try:
        with flop_counter() as counter:
            call()
    except (RuntimeError, MemoryError):  # torch's allocator past --memory-limit-gb
        return None
    return float(f"{counter.get_total_flops() / 1e9:.5g}")


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
    for name in dict.fromkeys(r["model"] for r in results):
        for part in PARTS:
            ran = [r for r in results if (r["model"], r["part"]) == (name, part) and "seconds" in r]
            tokens = [r["source_tokens"] for r in ran]
            counted = [r for r in ran if r["gflop"] is not None]  # the official side's count may be missing
            fits[f"{name}/{part}"] = {
                "time_exponent": slope(tokens, [r["seconds"] for r in ran]),
                "memory_exponent": slope(tokens, [r["peak_memory_mb"] for r in ran]),
                "flop_exponent": slope([r["source_tokens"] for r in counted], [r["gflop"] for r in counted]),
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


def official_peer(args: argparse.Namespace) -> dict | str:
    """The official code's Python and harness folder, with the versions its ``--check`` reports; or the one line
    saying what is missing."""
    python = args.official_python or os.environ.get("HIERSUMM_PYTHON") or sys.executable
    if not shutil.which(python):
        return f"the official code's Python {python} is not found: {PEER_SETUP}"
    harness = Path(args.peer_dir) / "harness.py"
    if not harness.is_file():
        return f"no peer harness at {harness} (--peer-dir): {PEER_SETUP}"
    child = subprocess.run([python, str(OFFICIAL_DRIVER), "--peer-dir", str(args.peer_dir), "--check"],
                           capture_output=True, text=True)
    if child.returncode:
        error = (child.stderr.strip().splitlines() or [f"exit status {child.returncode}"])[-1]
        return f"the official code does not run with {python} ({error}): {PEER_SETUP}"
    return {**json.loads(child.stdout.strip().splitlines()[-1]), "python": python, "peer_dir": str(args.peer_dir)}


def official_command(args: argparse.Namespace, peer: dict, part: str, paragraphs: int) -> list[str]:
    """An official case: the driver under the peer's Python, with ``model=small``'s sizes and hiersum's alpha."""
    config = ModelConfig()
    forwarded = ["--tokens", str(args.tokens), "--vocab", str(args.vocab), "--beam", str(args.beam),
                 "--steps", str(args.steps), "--target", str(args.target), "--repeats", str(args.repeats),
                 "--alpha", str(GenerationOptions().alpha), "--d-model", str(config.d_model),
                 "--heads", str(config.heads), "--ff-size", str(config.ff_size),
                 "--encoder-layers", str(config.encoder_layers),
                 "--inter-layers", ",".join(str(i) for i in config.inter_layers),
                 "--inter-heads", str(config.inter_heads), "--decoder-layers", str(config.decoder_layers)]
    forwarded += ["--threads", str(args.threads)] if args.threads else []
    return [peer["python"], str(OFFICIAL_DRIVER), "--peer-dir", peer["peer_dir"], *forwarded,
            "--case", f"{part}:{paragraphs}"]


def known_limit(args: argparse.Namespace, name: str, source_tokens: int) -> str | None:
    """The one line of a case that cannot run, known before its process starts: the official code off the CPU, and
    a flat source past the position table (the encoder's own error); None for a case to run."""
    if name == "official" and args.device != "cpu":
        return "the peer harness runs the official code on the CPU only"
    if name == "flat":
        return flat_source_limit(source_tokens, args.max_positions)
    return None


def limit_memory(gigabytes: float) -> None:
    """Cap this process's address space (a case past it fails with MemoryError instead of swapping)."""
    cap = int(gigabytes * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def run_cases(args: argparse.Namespace, peer: dict | None = None) -> dict:
    results = []
    for name in args.models:
        for part in args.parts:
            for paragraphs in sorted(args.paragraphs):
                case = {"model": name, "part": part, "paragraphs": paragraphs, "tokens": args.tokens,
                        "source_tokens": paragraphs * args.tokens}
                limit = known_limit(args, name, case["source_tokens"])
                if limit is not None:  # no process started
                    case["limit"] = limit
                    results.append(case)
                    print(json.dumps(case), file=sys.stderr, flush=True)
                    break
                command = (official_command(args, peer, part, paragraphs) if name == "official"
                           else child_command(args, f"{name}:{part}:{paragraphs}"))
                child = subprocess.run(
                    command, capture_output=True, text=True,
                    preexec_fn=(lambda: limit_memory(args.memory_limit_gb)) if args.device == "cpu" else None,
                )
                for line in child.stdout.splitlines():  # the measurement, then (hiersum's cases) the FLOP count
                    if line.startswith("{"):
                        case.update(json.loads(line))
                if child.returncode != 0:
                    reason = (child.stderr.strip().splitlines() or [f"exit status {child.returncode}"])[-1]
                    if "seconds" in case:  # died counting FLOPs: the time and peak stand
                        case.update(gflop=None, flop_count_failed=reason)
                    else:
                        case["failed"] = reason
                results.append(case)
                print(json.dumps(case), file=sys.stderr, flush=True)
                if "seconds" not in case:
                    break  # the larger sizes would fail too
    settings = {key: getattr(args, key) for key in ("tokens", "vocab", "beam", "steps", "target", "repeats", "device",
                                                     "copy", "activation_checkpointing", "max_positions",
                                                     "memory_limit_gb")}
    settings["official"] = peer
    return {"settings": {**settings, "model": "small (ModelConfig defaults), random weights (seed 0)",
                         "torch": torch.__version__, "threads": args.threads or torch.get_num_threads()},
            "results": results, "exponents": exponents(results)}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=None,
                        help="default: hierarchical flat, and official where its peer runs")
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
    parser.add_argument("--official-python",
                        help="the official code's Python (default: HIERSUMM_PYTHON, else this Python)")
    parser.add_argument("--peer-dir", type=Path, default=PEER_DIR, help="the folder of the official code's harness.py")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # model:part:paragraphs, run in a child process
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.case:
        kept = keep_freed_memory()  # as hiersum train and summarize do (hiersum.allocator)
        name, part, paragraphs = args.case.split(":")
        measured, call = run_case(args, name, part, int(paragraphs))
        print(json.dumps({**measured, "keep_freed_memory": kept}), flush=True)
        print(json.dumps({"gflop": count_gflop(call)}), flush=True)
        return
    peer = None
    if args.models is None or "official" in args.models:
        found = official_peer(args)
        if args.models is None:
            args.models = ["hierarchical", "flat", *(["official"] if isinstance(found, dict) else [])]
        elif isinstance(found, str):
            sys.exit(f"bench_length.py --models official: {found}")
        peer = found if isinstance(found, dict) else None
    print(json.dumps(run_cases(args, peer), indent=2))


if __name__ == "__main__":
    main()
