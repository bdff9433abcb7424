"""Batch summarizing throughput: ``hiersum summarize`` of many records (2,000 by default), per model, decoding
token budget (``batch_tokens``) and compiled step (``decode.compile_step``: on CUDA, CUDA graphs), in records and
summary tokens a second.

    python scripts/bench_summarize.py                                          # CPU, small, 200 records
    python scripts/bench_summarize.py --device cuda --precision bf16 --models small paper --records 2000 \\
        --cases 16384:off 65536:off 262144:off 65536:on     # the GPU check's part: budget:compiled step
    python scripts/bench_summarize.py --checkpoint outputs/train/<run>/checkpoints/best.ckpt

Prints one JSON line per case on stderr as it ends, then one JSON object. Without ``--checkpoint`` the script
trains a checkpoint of each ``--models`` preset first (``hiersum train model=M debug=fast_dev_run``, with
``trainer=gpu`` on CUDA: random-like weights, but the real network, tokenizer and front end; a summary's time does
not depend on what the weights say, as every summary is forced to ``--steps`` tokens by ``decode.min_length =
decode.max_length``, as ``scripts/bench_long_record.py`` does). The input is the sample corpus's test split
(``data/sample/test.jsonl``, 200 records) repeated with new ids up to ``--records``.

A case is ``BUDGET:off`` or ``BUDGET:on``: summarize's ``batch_tokens`` and ``decode.compile_step``. Per case:
``seconds``, the wall time of the whole ``hiersum summarize`` process (start-up, loading, compiling, reading,
decoding, writing); ``records_per_s`` and ``tokens_per_s`` (summary tokens) over it; and the same net of
``startup_seconds``, the wall time of the command on the first 4 records (once per model and compile setting, at
the first case's budget), so ``net_records_per_s`` is the rate once the process runs (null when the whole run
took no longer). ``--time-limit`` skips the cases that would start after it (listed in ``skipped``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_long_record import ROOT, measure, train_checkpoint  # noqa: E402  (its timing and checkpoint)

SAMPLE_TEST = ROOT / "data" / "sample" / "test.jsonl"
STARTUP_RECORDS = 4
"""Records of the run that measures a case's start-up (loading, compiling, the first batch)."""


def write_records(path: Path, count: int) -> None:
    """``count`` records: the sample test split's, repeated in turn, each with an id of its own."""
    records = [json.loads(line) for line in SAMPLE_TEST.read_text(encoding="utf-8").splitlines()]
    with open(path, "w", encoding="utf-8") as out:
        for number, record in zip(range(count), itertools.cycle(records)):
            out.write(json.dumps({**record, "id": f"{record['id']}-{number}"}) + "\n")


@dataclass(frozen=True)
class Case:
    """``BUDGET:off`` or ``BUDGET:on``: summarize's ``batch_tokens`` and ``decode.compile_step``."""

    batch_tokens: int
    compile_step: bool

    @classmethod
    def parse(cls, text: str) -> Case:
        budget, _, compiled = text.partition(":")
        if not budget.isdigit() or compiled not in ("off", "on"):
            raise argparse.ArgumentTypeError(f"a case is BUDGET:off or BUDGET:on (e.g. 8192:off), got {text!r}")
        return cls(int(budget), compiled == "on")


def summarize_command(args: argparse.Namespace, checkpoint: Path, records: Path, output: Path,
                      case: Case) -> list[str]:
    return [sys.executable, "-m", "hiersum.cli.main", "summarize", f"checkpoint={checkpoint}", f"input={records}",
            f"output={output}", "overwrite=true", f"device={args.device}", f"precision={args.precision}",
            f"batch_tokens={case.batch_tokens}", f"decode.beam_size={args.beam}", f"decode.min_length={args.steps}",
            f"decode.max_length={args.steps}", f"decode.compile_step={str(case.compile_step).lower()}",
            f"hydra.run.dir={output.parent / 'hydra'}"]


def run_case(args: argparse.Namespace, model: str, checkpoint: Path, inputs: dict[int, Path], workdir: Path,
             case: Case, startup_seconds: float) -> dict:
    """One case on all the records, its rates net of ``startup_seconds``."""
    output = workdir / f"{model}-{case.batch_tokens}-{case.compile_step}.jsonl"
    run = measure(summarize_command(args, checkpoint, inputs[args.records], output, case))
    written = len(output.read_text(encoding="utf-8").splitlines())
    if written != args.records:
        raise SystemExit(f"bench_summarize: {output} holds {written} summaries, expected {args.records}")
    seconds, net = run["seconds"], run["seconds"] - startup_seconds
    tokens = args.records * args.steps
    return {"model": model, "batch_tokens": case.batch_tokens, "compile_step": case.compile_step,
            "records": args.records, "seconds": seconds, "startup_seconds": startup_seconds,
            "peak_memory_mb": run["peak_memory_mb"], "records_per_s": round(args.records / seconds, 1),
            "tokens_per_s": round(tokens / seconds, 1),
            "net_records_per_s": round(args.records / net, 1) if net > 0 else None,
            "net_tokens_per_s": round(tokens / net, 1) if net > 0 else None}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, help="one checkpoint to measure (default: one trained per --models)")
    parser.add_argument("--models", nargs="+", default=["small"], help="model presets of the checkpoints trained here")
    parser.add_argument("--records", type=int, default=200)
    parser.add_argument("--cases", type=Case.parse, nargs="+", default=[Case(8192, False)],
                        help="BUDGET:off|on: batch_tokens and decode.compile_step (on CUDA: CUDA graphs)")
    parser.add_argument("--device", default="cpu", help="cpu | cuda")
    parser.add_argument("--precision", default="32", help="summarize's precision (32, bf16, ...)")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--steps", type=int, default=60, help="summary tokens (min_length = max_length)")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds after which no case starts")
    args = parser.parse_args(argv)
    if args.records < STARTUP_RECORDS:
        parser.error(f"--records: at least {STARTUP_RECORDS}, got {args.records}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    start = time.perf_counter()
    results, skipped = [], []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        inputs = {count: workdir / f"records-{count}.jsonl" for count in (STARTUP_RECORDS, args.records)}
        for count, path in inputs.items():
            write_records(path, count)
        trainer = ["trainer=gpu"] if args.device.startswith("cuda") else []
        checkpoints = ({"given": args.checkpoint.resolve()} if args.checkpoint else
                       {model: train_checkpoint(workdir / model, model, *trainer) for model in args.models})
        for model, checkpoint in checkpoints.items():
            startup: dict[bool, float] = {}  # per compile setting
            for case in args.cases:
                if args.time_limit is not None and time.perf_counter() - start > args.time_limit:
                    skipped.append({"model": model, **asdict(case)})
                    continue
                if case.compile_step not in startup:
                    output = workdir / "startup.jsonl"
                    startup[case.compile_step] = measure(summarize_command(
                        args, checkpoint, inputs[STARTUP_RECORDS], output, case))["seconds"]
                results.append(run_case(args, model, checkpoint, inputs, workdir, case, startup[case.compile_step]))
                print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    settings = {key: getattr(args, key) for key in ("records", "device", "precision", "beam", "steps")}
    print(json.dumps({"settings": settings, "results": results, "skipped": skipped}, indent=2))


if __name__ == "__main__":
    main()
