"""The GPU check (``make gpu-check``): on a machine with a CUDA GPU, run in parts of under 10 minutes each the test
suite on CUDA, the training and decoding benchmarks (fp32 and bf16-mixed, compiled against eager), the attention's
cost on new shapes, the dry run's memory estimate of the paper-size model beside a measured step, the paper-size
model for 200 steps in bf16-mixed (eager and compiled) and its kernel profile, the records/s of ``hiersum summarize``
per token budget and CUDA-graph step, ``experiment=cnndm_gpu`` scored against lead-3, and the SciTLDR-A pair (from
scratch against the MiniLM encoder); print one JSON summary.

    python scripts/gpu_check.py                                  # every part
    python scripts/gpu_check.py --parts tests,bench_train_bf16   # some of them, in that order
    python scripts/gpu_check.py --time-limit 540 --parts ...     # a 10-minute lease: each part gets what is left
    python scripts/gpu_check.py --list                           # the parts and what each runs

Each part runs its commands as child processes (stopped, with every process they started, after ``--part-timeout``
seconds, 570 by default, or the part's own cap, or what ``--time-limit`` leaves; a part left under 30 s is
skipped), their output kept in ``--out``/<part>.log; the summary gives per part ``status`` (ok, failed or
skipped), ``seconds``, ``figures`` (what the part measured) and ``reason`` (why it failed or was skipped). The exit
status is 1 when a part failed, and when the machine has no CUDA GPU (one line on stderr, nothing run); 2 for an
unknown part.

Data: ``--data`` (default ``../shared/data``) holds ``multi-news-sample/`` (the training benchmarks' real
batches), ``cnn-dailymail/`` and ``scitldr-a/``; ``--minilm`` the all-MiniLM-L6-v2 directory (docs/model.md, "A
pretrained paragraph encoder"). A part whose data is absent is skipped. docs/benchmarks.md ("GPU check") says how
to set the machine up.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PART_TIMEOUT = 570
"""Seconds a part's command may run: every part stays under 10 minutes."""


@dataclass(frozen=True)
class Context:
    """What the parts read."""

    python: str
    """the interpreter the parts' commands run under (this one's)"""
    data: Path
    """``--data``: holds multi-news-sample/ and scitldr-a/"""
    minilm: Path
    """``--minilm``: the all-MiniLM-L6-v2 directory"""
    out: Path
    """``--out``: the parts' logs and run directories"""
    timeout: int = PART_TIMEOUT
    """seconds a command may run"""
    deadline: float | None = None
    """``time.monotonic()`` by which the whole check ends (``--time-limit``), or None"""

    def seconds_left(self, part: Part) -> float:
        """The seconds ``part``'s commands may still run: its own limit, the check's, and the time left."""
        limit = min(part.timeout or self.timeout, self.timeout)
        return limit if self.deadline is None else min(limit, self.deadline - time.monotonic())

    def script(self, name: str) -> list[str]:
        return [self.python, str(ROOT / "scripts" / name)]

    def hiersum(self, *overrides: str, run: str, action: str = "train") -> list[str]:
        """``hiersum <action>`` with ``overrides``, its run directory ``out/<run>``."""
        return [self.python, "-m", "hiersum", action, *overrides, f"hydra.run.dir={self.out / run}"]


@dataclass(frozen=True)
class Part:
    """One part of the check: its commands (given the context), what it needs, and how its figures are read."""

    name: str
    about: str
    commands: Callable[[Context], list[list[str]]]
    needs: Callable[[Context], str | None] = lambda context: None
    """Why the part cannot run here (a missing folder), or None."""
    figures: Callable[[Context, list[str]], dict[str, Any]] = lambda context, outputs: {}
    """The part's figures from its commands' standard outputs (and the files they wrote)."""
    timeout: int | None = None
    """Seconds the part's commands may run in all, when less than ``--part-timeout``."""


STATUSES = ("ok", "failed", "skipped")
"""What became of a part."""


@dataclass
class Outcome:
    """What a part gave: one entry of the summary."""

    status: str
    seconds: float = 0.0
    figures: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None

    def as_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {"status": self.status, "seconds": round(self.seconds, 1), "figures": self.figures}
        if self.reason:
            record["reason"] = self.reason
        return record


# --- the parts -------------------------------------------------------------------------------------------------

def _pytest_figures(_context: Context, outputs: list[str]) -> dict[str, Any]:
    """The counts of pytest's last summary line (``3 failed, 510 passed, 12 skipped in 300.1s``)."""
    lines = [line for line in outputs[-1].splitlines() if " in " in line and ("passed" in line or "failed" in line)]
    if not lines:
        return {}
    counts = {}
    for item in lines[-1].strip("= ").split(" in ")[0].split(", "):
        number, _, what = item.partition(" ")
        if number.isdigit():
            counts[what] = int(number)
    return counts


def last_json(output: str) -> dict[str, Any]:
    """The JSON object a benchmark prints last (indented over several lines) in ``output``."""
    start = output.rfind("\n{")
    return json.loads(output[start + 1 if start >= 0 else 0:])


def _bench_train_figures(_context: Context, outputs: list[str]) -> dict[str, Any]:
    """Per model/case: compiled over eager, the MFU and real source tokens/s of each, the graphs and compile time."""
    figures = {}
    for result in last_json(outputs[-1])["results"]:
        figures[f"{result['model']}/{result['case']}"] = {
            "speedup": result["speedup"], "graphs": result.get("graphs"),
            "first_step_seconds": result.get("first_step_seconds"),
            **{f"{name}_{key}": result[name][key] for name in ("eager", "compiled")
               for key in ("mfu", "src_tokens_per_s")},
        }
    return figures


def _bench_decode_figures(_context: Context, outputs: list[str]) -> dict[str, Any]:
    """bench_decode's JSON summary as it prints it (its own keys), the last command's."""
    report = last_json(outputs[-1])
    return {key: value for key, value in report.items() if key != "settings"}


def _run_figures(run: str) -> Callable[[Context, list[str]], dict[str, Any]]:
    """A training run's figures: its throughput (median of the logged windows) and the metrics it scored."""

    def figures(context: Context, _outputs: list[str]) -> dict[str, Any]:
        from hiersum.evaluation.report import throughput_items

        run_dir = context.out / run
        found: dict[str, Any] = {}
        metrics_file = run_dir / "metrics.json"
        if metrics_file.is_file():
            metrics = json.loads(metrics_file.read_text(encoding="utf-8"))
            found["validation_loss"] = metrics.get("validation_loss")
            for split in ("validation", "test"):
                scored = metrics.get(split) if isinstance(metrics.get(split), dict) else {}
                for system in ("model", "lead3"):
                    if isinstance(scored.get(system), dict):
                        name = split if system == "model" else f"{split}_{system}"
                        found[name] = {key: scored[system][key] for key in ("rouge1", "rouge2", "rougeL", "rougeLsum")
                                       if key in scored[system]}
        curves = run_dir / "csv" / "metrics.csv"
        if curves.is_file():
            found["throughput"] = dict(throughput_items(curves))
        return found

    return figures


def _bench_decode_commands(context: Context) -> list[list[str]]:
    """bench_decode on CUDA with the flags it has: ``--precision`` and ``--compile`` when its ``--help`` lists them."""
    base = [*context.script("bench_decode.py"), "--device", "cuda", "--repeats", "3"]
    options = subprocess.run([*base[:2], "--help"], capture_output=True, text=True, cwd=ROOT).stdout
    variants = [[]]
    if "--precision" in options:
        variants.append(["--precision", "bf16-mixed" if "bf16-mixed" in options else "bf16"])
    if "--compile" in options:
        variants = [variant + extra for variant in variants for extra in ([], ["--compile"])]
    return [base + variant for variant in variants]


def _needs(*paths: Callable[[Context], Path]) -> Callable[[Context], str | None]:
    def missing(context: Context) -> str | None:
        absent = [str(path(context)) for path in paths if not path(context).exists()]
        return f"absent: {', '.join(absent)}" if absent else None

    return missing


def _multinews(context: Context) -> Path:
    return context.data / "multi-news-sample"


def _scitldr(context: Context) -> Path:
    return context.data / "scitldr-a"


def _bench_train(precision: str) -> Callable[[Context], list[list[str]]]:
    return lambda context: [[*context.script("bench_train.py"), "--device", "cuda", "--precision", precision,
                             "--compile", "--models", "small", "paper", "--cases", "ragged", "multinews",
                             "--multinews", str(_multinews(context)), "--threads", "0"]]


SCITLDR_MINUTES = "00:00:07:30"
"""The SciTLDR-A runs' time limit (``trainer.max_time``): with the dev decoding, under 10 minutes a part."""


def _scitldr_run(experiment: str, *extra: str) -> Callable[[Context], list[list[str]]]:
    return lambda context: [context.hiersum(
        f"experiment={experiment}", "trainer=gpu", f"data.path={_scitldr(context)}",
        f"trainer.max_time={SCITLDR_MINUTES}", *(option.format(minilm=context.minilm) for option in extra),
        run=experiment,
    )]


PAPER_STEPS = ("model=paper", "trainer=gpu", "trainer.precision=bf16-mixed", "trainer.max_steps=200",
               "trainer.max_epochs=-1", "trainer.log_every_n_steps=10", "data.batch_tokens=16384", "eval_split=null",
               "logger=csv")
"""The paper-size model for 200 steps in bf16-mixed, on the embedded sample corpus (no test decoding), in batches
of 16384 grid tokens (the sample's default 6144 leaves a GPU idle)."""


def _cnndm(context: Context) -> Path:
    return context.data / "cnn-dailymail"


CNNDM_RESERVE = 110
"""Seconds of the cnndm_gpu part kept for what is not training: the tokenizer, preparing the corpus, the scoring."""
CNNDM_MINUTES = 10
"""The recipe's training time (``trainer.max_time``); the check trains for less when its part has less left."""
CNNDM_EVAL_ARTICLES = 500
"""Validation articles the check's CNN/DailyMail checkpoint is scored on, against lead-3."""


def _cnndm_commands(context: Context) -> list[list[str]]:
    """experiment=cnndm_gpu for its 10 minutes or the part's time less ``CNNDM_RESERVE`` (a step checkpoint every
    100 steps, so that the time limit leaves a recent last.ckpt), then its last checkpoint scored on the first
    validation articles with lead and lead-3."""
    run_dir = context.out / "cnndm_gpu"
    seconds = max(60, min(CNNDM_MINUTES * 60, context.timeout - CNNDM_RESERVE))
    train = context.hiersum("experiment=cnndm_gpu", f"data.path={_cnndm(context)}",
                            f"trainer.max_time=00:00:{seconds // 60:02d}:{seconds % 60:02d}",
                            "trainer.val_check_interval=250", "trainer.check_val_every_n_epoch=null",
                            "checkpoint_every_n_steps=100", "eval_split=null",
                            "logger=csv", run="cnndm_gpu")
    evaluate = context.hiersum(f"checkpoint={run_dir / 'checkpoints' / 'last.ckpt'}", f"data.path={_cnndm(context)}",
                               "split=validation", f"data.limit_eval_examples={CNNDM_EVAL_ARTICLES}", "device=cuda",
                               "baselines=[lead,lead3]", "workers=8", "attention_examples=0",
                               run="cnndm_gpu_evaluate", action="evaluate")
    return [train, evaluate]


def _cnndm_figures(context: Context, outputs: list[str]) -> dict[str, Any]:
    """The run's throughput and validation curve, and the evaluation's ROUGE of the model and lead-3."""
    found = _run_figures("cnndm_gpu")(context, outputs)
    found.update(_run_figures("cnndm_gpu_evaluate")(context, outputs))
    return found


def _bench_summarize_figures(_context: Context, outputs: list[str]) -> dict[str, Any]:
    """Per model, budget and compiled step: records/s and summary tokens/s (whole process and net of start-up)."""
    report = last_json(outputs[-1])
    return {f"{r['model']}/{r['batch_tokens']}/{'graphs' if r['compile_step'] else 'eager'}":
            {key: r[key] for key in ("records_per_s", "tokens_per_s", "net_records_per_s", "net_tokens_per_s",
                                     "startup_seconds")} for r in report["results"]} | {"skipped": report["skipped"]}


def _attention_shapes_figures(_context: Context, outputs: list[str]) -> dict[str, Any]:
    """Per choice of kernel (PyTorch's, hiersum's): the median ms of a call on a new shape and again, their ratio."""
    return {choice: {"first_ms": result["first"]["median_ms"], "again_ms": result["again"]["median_ms"],
                     "first_over_again": result["first_over_again"]}
            for choice, result in last_json(outputs[-1])["results"].items()}


def _profile_figures(_context: Context, outputs: list[str]) -> dict[str, Any]:
    """Per model/case and implementation: MFU, the GPU's busy time, the gemm share and the top kernels."""
    figures = {}
    for result in last_json(outputs[-1])["results"]:
        for name in ("padded", "packed"):
            figures[f"{result['model']}/{result['case']}/{name}"] = {
                key: result[name].get(key) for key in ("mfu", "src_tokens_per_s", "kernel_ms", "gemm_time_share",
                                                       "top_kernels")}
    return figures


SUMMARIZE_CASES = ("16384:off", "65536:off", "262144:off", "65536:on")
"""bench_summarize's cases on the GPU: the token budget raised, and the CUDA-graph step at one budget."""

CUDA_CORE_TESTS = ("tests/test_cuda.py", "tests/training/test_mixed_precision.py", "tests/training/test_dry_run.py",
                   "tests/decoding", "tests/model", "tests/checkpoints/test_io.py", "tests/inference")
"""The tests of what failed on CUDA before (the tests part runs them all)."""


def _dry_run_figures(context: Context, _outputs: list[str]) -> dict[str, Any]:
    """The dry run's estimate of a step's peak in bf16-mixed beside the peak a real step of it measured on the GPU."""
    found = json.loads((context.out / "dry_run_paper" / "dry_run.json").read_text(encoding="utf-8"))["dry_run"]
    estimate = next(step["total"] for step in found["steps"] if step["precision"] == "bf16-mixed")
    measured = (found.get("measured") or {}).get("bytes")
    return {"batch": found["batch"], "estimate_mib": round(estimate / 2**20, 1),
            "measured_mib": None if measured is None else round(measured / 2**20, 1),
            "measured_over_estimate": None if measured is None else round(measured / estimate, 3)}


TEST_WORKERS = max(1, min(14, (os.cpu_count() or 1) - 2))
"""pytest-xdist workers of the tests part: on the 16 cores of an H200 machine the suite took 193 s with 14."""
CPU_ONLY_TESTS = ("tests/training/test_dead_worker.py", "tests/cli/test_launcher_fanout.py")
"""Test files that start CPU processes over gloo or submitit and use no GPU: ``make test`` runs them."""
TESTS_NEEDING = {"tests/serving/test_schema_fuzzed.py": "schemathesis"}
"""Test files that import a package of the dev extra at their top which the lent GPU machines' image lacks and
``make gpu-wheels`` does not carry (schemathesis and its dozen dependencies): where it is missing, the tests part
leaves the file out (one error of collection otherwise) and its figures name it."""


def tests_left_out() -> tuple[list[str], list[str]]:
    """The tests part's files left out: those of :data:`CPU_ONLY_TESTS`, and those of :data:`TESTS_NEEDING` whose
    package this interpreter lacks (the second list)."""
    missing = [path for path, package in TESTS_NEEDING.items() if importlib.util.find_spec(package) is None]
    return [*CPU_ONLY_TESTS, *missing], missing


def _tests_figures(context: Context, outputs: list[str]) -> dict[str, Any]:
    """pytest's counts, and the files left out for a missing package."""
    return {**_pytest_figures(context, outputs), "left_out_for_a_missing_package": tests_left_out()[1]}


def _pytest(context: Context, *args: str) -> list[str]:
    """pytest on CUDA's test workers (``TEST_WORKERS``), failures and errors listed, with ``args``."""
    return [context.python, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", "-n", str(TEST_WORKERS),
            "--dist", "worksteal", *args]


PARTS: tuple[Part, ...] = (
    Part("tests", "the test suite with HIERSUM_TEST_DEVICE=cuda (tests/test_cuda.py runs; a worker a core but two, "
         "at most 14), less the multi-process CPU tests over gloo",
         lambda c: [_pytest(c, *(f"--ignore={path}" for path in tests_left_out()[0]), "tests")],
         figures=_tests_figures),
    Part("bench_train_fp32", "scripts/bench_train.py --device cuda --precision 32-true --compile (small, paper)",
         _bench_train("32-true"), needs=_needs(_multinews), figures=_bench_train_figures),
    Part("bench_train_bf16", "scripts/bench_train.py --device cuda --precision bf16-mixed --compile (small, paper)",
         _bench_train("bf16-mixed"), needs=_needs(_multinews), figures=_bench_train_figures),
    Part("bench_decode", "scripts/bench_decode.py --device cuda (with --precision / --compile when it has them)",
         _bench_decode_commands, figures=_bench_decode_figures),
    Part("attention_shapes", "scripts/bench_attention_shapes.py --device cuda: bf16 attention on new shapes and "
         "again, PyTorch's choice of kernel against hiersum's (no cuDNN)",
         lambda c: [[*c.script("bench_attention_shapes.py"), "--device", "cuda"]], figures=_attention_shapes_figures,
         timeout=90),
    Part("dry_run_paper", "hiersum train dry_run=true with the paper_bf16 part's options: the estimated peak of a "
         "step beside the peak of a real one on the GPU",
         lambda c: [c.hiersum("dry_run=true", *PAPER_STEPS, run="dry_run_paper")], figures=_dry_run_figures,
         timeout=90),
    Part("paper_bf16", "hiersum train " + " ".join(PAPER_STEPS),
         lambda c: [c.hiersum(*PAPER_STEPS, run="paper_bf16")], figures=_run_figures("paper_bf16"), timeout=150),
    Part("paper_bf16_compiled", "the same, compile=true",
         lambda c: [c.hiersum(*PAPER_STEPS, "compile=true", run="paper_bf16_compiled")],
         figures=_run_figures("paper_bf16_compiled"), timeout=180),
    Part("profile_paper_bf16", "scripts/bench_train.py --device cuda --precision bf16-mixed --profile (paper, "
         "Multi-News batches): MFU, padded and packed, and the kernels that take the GPU's time",
         lambda c: [[*c.script("bench_train.py"), "--device", "cuda", "--precision", "bf16-mixed", "--models", "paper",
                     "--cases", "multinews", "--multinews", str(_multinews(c)), "--profile", "--repeats", "1",
                     "--threads", "0"]],
         needs=_needs(_multinews), figures=_profile_figures, timeout=90),
    Part("summarize_throughput", "scripts/bench_summarize.py --device cuda --precision bf16 (paper, small; 2,000 "
         f"records; budget:compiled step {' '.join(SUMMARIZE_CASES)})",
         lambda c: [[*c.script("bench_summarize.py"), "--device", "cuda", "--precision", "bf16", "--models", "paper",
                     "small", "--records", "2000", "--cases", *SUMMARIZE_CASES, "--time-limit",
                     str(max(c.timeout - 40, 0))]],
         figures=_bench_summarize_figures, timeout=150),
    Part("tests_cuda_core", "the tests part's files of what failed on CUDA before: " + ", ".join(CUDA_CORE_TESTS),
         lambda c: [_pytest(c, "--timeout", "150", *CUDA_CORE_TESTS)],
         figures=_pytest_figures, timeout=240),
    Part("cnndm_gpu", f"hiersum train experiment=cnndm_gpu for {CNNDM_MINUTES} minutes (less when the part has "
         f"less than that and {CNNDM_RESERVE} s), then its last checkpoint on "
         f"{CNNDM_EVAL_ARTICLES} validation articles against lead-3",
         _cnndm_commands, needs=_needs(_cnndm), figures=_cnndm_figures),
    Part("scitldr_scratch", f"hiersum train experiment=scitldr_scratch trainer=gpu (max_time {SCITLDR_MINUTES})",
         _scitldr_run("scitldr_scratch"), needs=_needs(_scitldr), figures=_run_figures("scitldr_scratch")),
    Part("scitldr_minilm", f"hiersum train experiment=scitldr_minilm trainer=gpu (max_time {SCITLDR_MINUTES})",
         _scitldr_run("scitldr_minilm", "model.pretrained_encoder={minilm}"),
         needs=_needs(_scitldr, lambda c: c.minilm), figures=_run_figures("scitldr_minilm")),
)
PART_NAMES = tuple(part.name for part in PARTS)


# --- running ---------------------------------------------------------------------------------------------------

class UnknownPart(ValueError):
    """``--parts`` names a part there is not."""


def select_parts(spec: str | None) -> list[Part]:
    """The parts ``--parts`` names, in the order it names them (comma-separated; None or empty: all, in the
    check's order): under ``--time-limit`` the first named is the first served."""
    names = [name.strip() for name in (spec or "").split(",") if name.strip()]
    unknown = [name for name in names if name not in PART_NAMES]
    if unknown:
        raise UnknownPart(f"gpu_check: --parts: unknown part {', '.join(unknown)}; expected some of "
                          f"{', '.join(PART_NAMES)}")
    by_name = {part.name: part for part in PARTS}
    return [by_name[name] for name in dict.fromkeys(names)] if names else list(PARTS)


def cuda_device() -> str:
    """The name of the CUDA GPU torch sees; raises ``SystemExit`` (one line) when there is none."""
    import torch

    if not torch.cuda.is_available():
        raise SystemExit(f"gpu_check: no CUDA GPU: torch {torch.__version__} sees none "
                         "(torch.cuda.is_available() is False); run it on a machine with an NVIDIA GPU")
    return torch.cuda.get_device_name()


MIN_PART_SECONDS = 30
"""A part that would have less than this left of ``--time-limit`` is skipped."""


def run_command(command: list[str], env: dict[str, str], log: Any, timeout: float) -> subprocess.CompletedProcess:
    """Run ``command`` in a process group of its own (its standard error to ``log``); at ``timeout`` the whole
    group is killed (a training run's data workers and compile workers too), what it printed so far written to
    ``log``, and ``TimeoutExpired`` raised."""
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=log, text=True,
                               start_new_session=True)
    try:
        stdout, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        log.write(process.communicate()[0] or "")
        raise
    return subprocess.CompletedProcess(command, process.returncode, stdout)


def run_part(part: Part, context: Context) -> Outcome:
    """Run the part's commands one after the other (the first failure ends it) within the seconds it has left;
    its log in ``out/<name>.log``."""
    missing = part.needs(context)
    if missing:
        return Outcome("skipped", reason=missing)
    seconds = context.seconds_left(part)
    if context.deadline is not None and seconds < MIN_PART_SECONDS:
        return Outcome("skipped", reason=f"the check's --time-limit leaves {max(seconds, 0):.0f} s")
    start = time.perf_counter()
    outputs = []
    env = {**os.environ, "HIERSUM_TEST_DEVICE": "cuda", "PYTHONUNBUFFERED": "1"}
    with open(context.out / f"{part.name}.log", "w", encoding="utf-8") as log:
        for command in part.commands(replace(context, timeout=int(seconds))):
            log.write(f"$ {' '.join(command)}\n")
            log.flush()
            try:
                done = run_command(command, env, log, seconds - (time.perf_counter() - start))
            except subprocess.TimeoutExpired:
                return Outcome("failed", time.perf_counter() - start, reason=f"timed out after {seconds:.0f} s")
            log.write(done.stdout)
            outputs.append(done.stdout)
            if done.returncode != 0:
                reason = f"exit status {done.returncode} ({context.out / (part.name + '.log')})"
                return Outcome("failed", time.perf_counter() - start, _figures(part, context, outputs), reason)
    return Outcome("ok", time.perf_counter() - start, _figures(part, context, outputs))


def _figures(part: Part, context: Context, outputs: list[str]) -> dict[str, Any]:
    """The part's figures; a figure that cannot be read is reported as such, not as a failed check."""
    try:
        return part.figures(context, outputs)
    except (ValueError, KeyError, IndexError, TypeError) as error:
        return {"unreadable": f"{type(error).__name__}: {error}"}


def summary(device: str, outcomes: dict[str, Outcome]) -> dict[str, Any]:
    """The JSON summary: the device, each part's outcome, and whether every part that ran is ok."""
    counts = {status: sum(o.status == status for o in outcomes.values()) for status in STATUSES}
    return {"device": device, "ok": counts["failed"] == 0, "counts": counts,
            "parts": {name: outcome.as_json() for name, outcome in outcomes.items()}}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", help=f"comma-separated, of: {', '.join(PART_NAMES)} (default: all)")
    parser.add_argument("--list", action="store_true", help="list the parts and exit")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--minilm", type=Path, default=Path(os.environ.get("MINILM", ROOT / "minilm")))
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "gpu-check")
    parser.add_argument("--part-timeout", type=int, default=PART_TIMEOUT, help="seconds a part's commands may run")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="seconds the whole check may run: a part gets what is left (skipped under "
                             f"{MIN_PART_SECONDS} s)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        parts = select_parts(args.parts)
    except UnknownPart as error:
        print(error, file=sys.stderr)
        return 2
    if args.list:
        print("\n".join(f"{part.name}: {part.about}" for part in parts))
        return 0
    device = cuda_device()
    args.out.mkdir(parents=True, exist_ok=True)
    deadline = None if args.time_limit is None else time.monotonic() + args.time_limit
    context = Context(sys.executable, args.data.resolve(), args.minilm.resolve(), args.out.resolve(), args.part_timeout,
                      deadline)
    outcomes = {}
    for part in parts:
        outcomes[part.name] = run_part(part, context)
        print(json.dumps({part.name: outcomes[part.name].as_json()}), file=sys.stderr, flush=True)
    report = summary(device, outcomes)
    print(json.dumps(report, indent=2))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
