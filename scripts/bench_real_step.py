"""Where the time of a real training step goes, by operator: the recipe of ``hiersum train`` (CNN/DailyMail on the
CPU by default), profiled with ``torch.profiler``.

    python scripts/bench_real_step.py                                   # experiment=cnndm_cpu on the shared corpus
    python scripts/bench_real_step.py --warmup 2 --steps 8 --val-batches 4 --threads 2
    python scripts/bench_real_step.py experiment=cnndm_cpu data.path=../shared/data/cnn-dailymail model.dropout=0
    python scripts/bench_real_step.py model=tiny data=sample --warmup 1 --steps 1 --val-batches 1
    python scripts/bench_real_step.py experiment=cnndm_gpu data.path=gpu-data/cnn-dailymail --device cuda

Run from the project root (relative paths resolve from the current directory, as ``hiersum train`` resolves them).
Prints one JSON object on stdout; progress and logs go to stderr.

Everything is built as :func:`hiersum.training.fit.fit` builds it, from ``conf/train.yaml`` composed with the
positional Hydra overrides (default ``experiment=cnndm_cpu data.path=../shared/data/cnn-dailymail``): the tokenizer
(:func:`~hiersum.training.fit.build_tokenizer`), the ``SummarizationDataModule`` with its splits prepared on disk,
the ``HierSumModule`` of :func:`~hiersum.training.module.module_hparams`, its optimizer and schedule
(``configure_optimizers``: the recipe's, AdamW and cosine decay for cnndm_cpu). The run directory
``paths.output_dir`` is ``--work-dir`` (default
``outputs/bench_real_step``, git-ignored), and so are the prepared corpus and its tokenizer (``data.cache_dir`` =
``<work-dir>/prepared`` unless an override sets it): a second run reuses them (the first trains the tokenizer and
encodes the splits, a few minutes for CNN/DailyMail).

One training step is what Lightning runs for ``HierSumModule`` on one batch: ``module.training_step(batch)`` with
its ``self.log`` calls turned off (``module.loss``: forward and label-smoothed NLL, plus the pooling penalty when the
model has one; under autocast with ``trainer.precision=bf16-mixed``), ``loss.backward()``, the divergence guard of
``HierSumModule.optimizer_step`` (a finite loss and gradient norm), ``optimizer.step()``, the schedule's step,
``optimizer.zero_grad(set_to_none=True)``; the module in train mode (dropout as the config says). Its batches are the
first ``--warmup`` + ``--steps`` batches of ``datamodule.train_dataloader()`` (the recipe's token-budget batches, its
shuffle and seed). The warm-up steps run first, untimed; then the ``--steps`` steps once under the profiler and once
timed without it. A validation step is ``module.validation_step(batch)`` with its logging turned off
(``module.teacher_forced``, the NLL and the perplexity update), the module in eval mode under
``torch.inference_mode`` as Lightning runs it (``torch.no_grad`` with ``trainer.inference_mode=false``), on the first
``--val-batches`` batches of ``val_dataloader()``, profiled then timed. ``--device cuda`` runs the module and the
batches on the GPU: autocast on CUDA for a mixed precision, each timed step between two ``torch.cuda.synchronize``,
MFU against the GPU's data-sheet peak; the operator tables stay the host's (on CUDA, the self CPU time of launching).

Figures: ``step_seconds`` (``val_step_seconds``): the median wall seconds of the timed steps (``step_seconds_each``
each of them, ``src_tokens`` and ``tgt_tokens`` their batches' real tokens); ``profiled_step_seconds`` the profiled
pass's mean (the profiler's overhead included); ``load_average`` the machine's at the end (on a shared machine the
figures measure the share of the CPU the run got). ``step_flops``: the mean over the timed steps of
:func:`hiersum.model.flops.training_flops` on the batch's real tokens (what ``HierSumModule.on_train_batch_start``
counts); ``peak_flops`` the peak the ``Throughput`` callback divides by (``callbacks.throughput.available_flops``,
else :func:`hiersum.model.flops.device_peak`: this CPU's measured and cached matrix-product roof at this thread
count, for the precision's dtype); ``mfu`` = ``step_flops / step_seconds / peak_flops``, the figure a run logs as
``train/device/mfu`` (there over a window of 50 steps). ``train_ops`` / ``val_ops``: the ``TOP_OPS`` operators with
the most self CPU time (ms per step, share of the pass's self CPU time, calls per step); an operator run inside
``optimizer.step()``, ``zero_grad`` or the guard is named ``<scope> > <operator>`` (on a CPU, Adam runs one
``aten::mul_``, ``aten::addcdiv_``, ... per parameter, which the model's own ``aten::mul_`` would otherwise hide).
``train_groups`` / ``val_groups``: the self CPU time summed into the buckets of :data:`GROUPS` (ms per step and share;
the shares sum to 1). Self CPU time is that of the thread that called the operator: the time its intra-op threads
spend beside it is not added, so the shares are shares of the step's wall time in operators.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import itertools
import json
import logging
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from unittest import mock

import pytorch_lightning as pl
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf
from pytorch_lightning.plugins.precision import MixedPrecision

from hiersum.allocator import keep_freed_memory
from hiersum.cli.common import CONFIG_DIR
from hiersum.commands.composed import command_config
from hiersum.commands.train import USAGE
from hiersum.config import TrainConfig, config_dict
from hiersum.data.datamodule import SummarizationDataModule
from hiersum.data.schema import Batch
from hiersum.inference.precision import decoding_precision
from hiersum.model.encoder_registry import run_tokenizer_config, validate_choices
from hiersum.model.flops import Peak, cpu_name, device_peak, synchronize, training_flops
from hiersum.training.fit import build_module, build_tokenizer, prepared_datamodule
from hiersum.training.module import HierSumModule

DEFAULT_OVERRIDES = ["experiment=cnndm_cpu", "data.path=../shared/data/cnn-dailymail"]
DEFAULT_WORK_DIR = Path("outputs/bench_real_step")
TOP_OPS = 25
"""Operators listed in ``train_ops`` and ``val_ops``."""
GUARD = "hiersum.update_guard"
"""The profiler's name of the divergence guard's work (a finite loss and gradient norm) in a step."""
SCOPES = ("Optimizer.", GUARD)
"""Annotations whose operators are named ``<scope> > <operator>``: Adam's ``step`` and ``zero_grad`` (the names
``torch.optim`` records, ``Optimizer.step#Adam.step``) and the guard."""
SCOPE_SEPARATOR = " > "
MIXED_PRECISIONS = ("bf16-mixed", "16-mixed")
"""``trainer.precision`` values whose forward runs under autocast (as Lightning's ``MixedPrecision`` plugin)."""

GROUPS: dict[str, str] = {
    "matrix_products": "aten::mm, addmm, bmm, baddbmm, matmul, linear, ... and their backward nodes",
    "attention": "scaled_dot_product_attention and its CPU flash kernel, forward and backward",
    "softmax": "softmax and log_softmax, forward and backward",
    "dropout": "dropout, native_dropout, bernoulli",
    "scatter_gather_index": "scatter, gather, index, index_select, index_put, embedding",
    "optimizer": "everything under optimizer.step() and zero_grad() (Adam, per parameter on a CPU), the guard, "
                 "any _foreach op",
    "layer_norm": "layer_norm, native_layer_norm and its backward",
    "copies": "copy_, _to_copy, to, cat, stack, clone, contiguous, CopySlices",
    "other": "everything else: element-wise ops, reductions, views, allocations, the loss, the autograd engine",
}
"""The buckets of ``train_groups`` / ``val_groups`` (:func:`group_of`). By name: the math fallback of
``scaled_dot_product_attention`` (taken in training with dropout) counts in its ``bmm``, ``_softmax`` and
``bernoulli_``, not in ``attention``, which gets the fused kernels only."""
MATRIX_PRODUCTS = {"mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "mv", "addmv", "dot", "vdot",
                   "einsum", "addmmactivation", "mkldnnlinear", "mkldnnmatmul"}
COPIES = {"copy", "tocopy", "to", "cat", "concat", "concatenate", "stack", "clone", "contiguous", "copyslices"}
KEYWORDS: dict[str, tuple[str, ...]] = {
    "attention": ("scaleddotproduct", "flashattention", "efficientattention"),
    "softmax": ("softmax",),
    "dropout": ("dropout", "bernoulli"),
    "layer_norm": ("layernorm",),
    "scatter_gather_index": ("scatter", "gather", "index", "embedding"),
}


class OpEvent(Protocol):
    """What :func:`group_ops` and :func:`op_table` read of an operator: the profiler's ``FunctionEventAvg``, or an
    :class:`OpTotal`."""

    key: str
    self_cpu_time_total: float
    """microseconds"""
    count: int


@dataclass
class OpTotal:
    """One operator (within its scope) summed over a profiled pass."""

    key: str
    self_cpu_time_total: float = 0.0
    """microseconds"""
    count: int = 0


@dataclass
class Run:
    """What :func:`build_run` builds: the typed config, the LightningModule and its datamodule."""

    config: TrainConfig
    module: HierSumModule
    datamodule: SummarizationDataModule


def train_config(overrides: list[str], work_dir: Path) -> TrainConfig:
    """``conf/train.yaml`` composed with ``overrides`` as ``hiersum train`` composes it, the run directory
    ``work_dir`` and, unless ``overrides`` sets it, the prepared corpora in ``work_dir/prepared``."""
    given = {option.split("=", 1)[0].lstrip("+~") for option in overrides}
    cache = [] if "data.cache_dir" in given else [f"data.cache_dir={work_dir.resolve() / 'prepared'}"]
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose("train", overrides=[*overrides, *cache], return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)  # ${hydra:...} resolves
    OmegaConf.update(cfg, "paths.output_dir", str(work_dir.resolve()), force_add=True)
    return command_config(cfg, TrainConfig, usage=USAGE)


def build(cfg: TrainConfig) -> tuple[HierSumModule, SummarizationDataModule]:
    """The tokenizer, the datamodule (splits prepared) and the module, as :func:`hiersum.training.fit.fit` builds
    them for a fresh run."""
    validate_choices(cfg)
    pl.seed_everything(cfg.seed, workers=True)
    tokenizer = build_tokenizer(run_tokenizer_config(cfg.tokenizer, cfg.model), cfg.data,
                                Path(cfg.paths["output_dir"]))
    datamodule = prepared_datamodule(cfg, tokenizer, ["train", "validation"])
    return build_module(cfg, tokenizer), datamodule


def build_run(overrides: list[str], work_dir: Path) -> Run:
    """:func:`train_config` and :func:`build`."""
    cfg = train_config(overrides, work_dir)
    return Run(cfg, *build(cfg))


def precision(cfg: TrainConfig) -> str:
    """``trainer.precision`` in Lightning's long names (an alias read as one when composed; ``32-true`` when
    unset)."""
    return str(config_dict(cfg.trainer).get("precision") or "32-true")


def autocast_context(cfg: TrainConfig, device: torch.device) -> Callable[[], contextlib.AbstractContextManager]:
    """What the forward runs under: Lightning's ``MixedPrecision`` autocast on ``device`` for a mixed precision, else
    nothing."""
    name = precision(cfg)
    if name in MIXED_PRECISIONS:
        return MixedPrecision(name, device.type).forward_context
    if name != "32-true":
        raise SystemExit(f"trainer.precision={name}: this benchmark runs 32-true, bf16-mixed and 16-mixed")
    return contextlib.nullcontext


def step_peak(cfg: TrainConfig, device: torch.device) -> Peak | None:
    """The peak the ``Throughput`` callback measures MFU against on ``device`` (its ``setup``)."""
    throughput = (cfg.callbacks or {}).get("throughput") or {}
    if throughput.get("available_flops") is not None:
        return Peak(float(throughput["available_flops"]), "callbacks.throughput.available_flops")
    return device_peak(device, decoding_precision(precision(cfg)).computes)


def first_batches(loader: Iterable[Batch], count: int, what: str) -> list[Batch]:
    batches = list(itertools.islice(loader, count))
    if len(batches) < count:
        raise SystemExit(f"{what}: {count} batches asked for, the split gives {len(batches)}")
    return batches


def no_log(*_args: Any, **_kwargs: Any) -> None:
    """``LightningModule.log`` replaced: nothing logged."""


def logging_off(module: HierSumModule) -> contextlib.AbstractContextManager:
    """The module's ``self.log`` calls do nothing while the block runs: the benchmark has no trainer (Lightning would
    warn at each call)."""
    return mock.patch.object(module, "log", no_log)


def training_step_fn(run: Run, device: torch.device) -> Callable[[Batch], None]:
    """One training step on a batch (see the module docstring), with the optimizer and schedule of
    ``configure_optimizers``; the module put in train mode."""
    module = run.module.train()
    configured = run.module.configure_optimizers()
    optimizer = configured["optimizer"]
    scheduler = configured.get("lr_scheduler", {}).get("scheduler")
    autocast = autocast_context(run.config, device)

    def step(batch: Batch) -> None:
        with autocast(), logging_off(module):
            loss = module.training_step(batch, 0)
        loss.backward()
        with torch.profiler.record_function(GUARD):
            finite = module.update_is_finite_here(loss)
        if finite:
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def validation_step_fn(run: Run, device: torch.device) -> Callable[[Batch], None]:
    """``HierSumModule.validation_step`` without its logging, under the trainer's no-grad mode, in eval mode."""
    module = run.module
    autocast = autocast_context(run.config, device)
    no_grad = torch.inference_mode if config_dict(run.config.trainer).get("inference_mode", True) else torch.no_grad

    def step(batch: Batch) -> None:
        module.eval()
        with no_grad(), autocast(), logging_off(module):
            module.validation_step(batch, 0)

    return step


def timed_steps(step: Callable[[Batch], None], batches: list[Batch], device: torch.device) -> list[float]:
    """Wall seconds of each step, the device's queue drained before and after."""
    seconds = []
    for batch in batches:
        synchronize(device)
        start = time.perf_counter()
        step(batch)
        synchronize(device)
        seconds.append(time.perf_counter() - start)
    return seconds


def scope_of(event: Any) -> str | None:
    """The outermost of :data:`SCOPES` that a profiler ``FunctionEvent`` ran inside (itself included), if any."""
    scope = None
    while event is not None:
        if event.name.startswith(SCOPES):
            scope = event.name
        event = event.cpu_parent
    return scope


def scoped_totals(events: Iterable[Any]) -> list[OpTotal]:
    """The profiler's events summed by name, as ``key_averages()`` sums them, except that an operator run inside one
    of :data:`SCOPES` is its own entry, ``<scope> > <name>``."""
    totals: dict[str, OpTotal] = {}
    for event in events:
        scope = scope_of(event)
        key = event.name if scope in (None, event.name) else f"{scope}{SCOPE_SEPARATOR}{event.name}"
        total = totals.setdefault(key, OpTotal(key))
        total.self_cpu_time_total += event.self_cpu_time_total
        total.count += 1
    return list(totals.values())


def profile_steps(step: Callable[[Batch], None], batches: list[Batch],
                  device: torch.device) -> tuple[list[OpTotal], float]:
    """One pass of ``step`` over ``batches`` under ``torch.profiler`` (the host's operators: on CUDA their self CPU
    time is what launching them cost): the operators' totals (:func:`scoped_totals`) and the pass's wall seconds."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=activities) as profiler:
        synchronize(device)
        start = time.perf_counter()
        for batch in batches:
            step(batch)
        synchronize(device)
        seconds = time.perf_counter() - start
    return scoped_totals(profiler.events()), seconds


def base_name(key: str) -> str:
    """An operator's name without its scope, ``aten::``, the autograd engine's prefix, a backward suffix and
    underscores, in lower case: ``AddmmBackward0`` and ``aten::addmm`` are ``addmm``."""
    name = key.rsplit(SCOPE_SEPARATOR, 1)[-1].removeprefix("autograd::engine::evaluate_function: ")
    name = re.sub(r"(_?backward|backwards)\d*$", "", name.removeprefix("aten::"), flags=re.IGNORECASE)
    return name.replace("_", "").lower()


def group_of(key: str) -> str:
    """The bucket of :data:`GROUPS` an operator's time is counted in: ``optimizer`` for one in a scope of
    :data:`SCOPES` (or a ``_foreach`` op), else the first whose names match its :func:`base_name`."""
    name = base_name(key)
    if key.startswith(SCOPES) or name.startswith("foreach"):
        return "optimizer"
    if name in MATRIX_PRODUCTS:
        return "matrix_products"
    for group, words in KEYWORDS.items():
        if any(word in name for word in words):
            return group
    return "copies" if name in COPIES else "other"


def shares(values: dict[str, float], digits: int = 4) -> dict[str, float]:
    """``values`` over their sum, rounded to ``digits`` so that they still sum to 1 (largest remainders)."""
    total, unit = sum(values.values()), 10**digits
    if total <= 0:
        return dict.fromkeys(values, 0.0)
    exact = {key: value / total * unit for key, value in values.items()}
    units = {key: int(value) for key, value in exact.items()}
    for key in sorted(exact, key=lambda key: exact[key] - units[key], reverse=True)[: unit - sum(units.values())]:
        units[key] += 1
    return {key: count / unit for key, count in units.items()}


def group_ops(events: Iterable[OpEvent], steps: int = 1) -> dict[str, dict[str, float]]:
    """The self CPU time of ``events`` summed into :data:`GROUPS`: ``{group: {"ms": per step, "share"}}``."""
    micros = dict.fromkeys(GROUPS, 0.0)
    for event in events:
        micros[group_of(event.key)] += event.self_cpu_time_total
    share = shares(micros)
    return {group: {"ms": round(us / 1e3 / steps, 3), "share": share[group]} for group, us in micros.items()}


def op_table(events: Iterable[OpEvent], steps: int, top: int = TOP_OPS) -> list[dict[str, Any]]:
    """The ``top`` operators by self CPU time: name, ms per step, share of the pass's self CPU time, calls per
    step."""
    events = list(events)
    total = sum(event.self_cpu_time_total for event in events) or 1.0
    ranked = sorted(events, key=lambda event: event.self_cpu_time_total, reverse=True)[:top]
    return [{"name": event.key, "self_cpu_ms": round(event.self_cpu_time_total / 1e3 / steps, 3),
             "share": round(event.self_cpu_time_total / total, 4), "calls": round(event.count / steps, 2)}
            for event in ranked]


def batch_flops(module: HierSumModule, batch: Batch) -> int | None:
    """What ``HierSumModule.on_train_batch_start`` counts for the batch."""
    return training_flops(module.model, *module.host_masks(batch))


def measure(run: Run, warmup: int, steps: int, val_batches: int,
            device: torch.device) -> dict[str, Any]:
    """The warm-up, profiled and timed passes of the training and validation steps (module docstring), the module
    and the batches on ``device``."""
    run.datamodule.setup("fit")
    run.module.to(device)
    train = [batch.to(device) for batch in first_batches(run.datamodule.train_dataloader(), warmup + steps, "train")]
    val = [batch.to(device) for batch in first_batches(run.datamodule.val_dataloader(), val_batches, "validation")]
    train_step = training_step_fn(run, device)
    for batch in train[:warmup]:
        train_step(batch)
    timed = train[warmup:]
    train_ops, profiled_seconds = profile_steps(train_step, timed, device)
    seconds = timed_steps(train_step, timed, device)
    val_step = validation_step_fn(run, device)
    val_ops, _ = profile_steps(val_step, val, device)
    val_seconds = timed_steps(val_step, val, device)
    run.module.val_perplexity.reset()
    flops = [batch_flops(run.module, batch) for batch in timed]
    step_seconds = statistics.median(seconds)
    step_flops = None if None in flops else statistics.fmean(flops)
    peak = step_peak(run.config, device)
    return {
        "step_seconds": round(step_seconds, 4), "step_seconds_each": [round(s, 4) for s in seconds],
        "profiled_step_seconds": round(profiled_seconds / steps, 4),
        "step_flops": None if step_flops is None else round(step_flops),
        "peak_flops": None if peak is None else peak.flops, "peak_source": None if peak is None else peak.source,
        "mfu": None if step_flops is None or peak is None else round(step_flops / step_seconds / peak.flops, 4),
        "src_tokens": [int(run.module.host_masks(batch)[0].sum()) for batch in timed],
        "tgt_tokens": [batch.n_target_tokens for batch in timed],
        "val_step_seconds": round(statistics.median(val_seconds), 4),
        "train_groups": group_ops(train_ops, steps), "train_ops": op_table(train_ops, steps),
        "val_groups": group_ops(val_ops, val_batches), "val_ops": op_table(val_ops, val_batches),
    }


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Anything printed while building and measuring goes to stderr: stdout holds the JSON alone."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("overrides", nargs="*", default=DEFAULT_OVERRIDES,
                        help=f"Hydra overrides of conf/train.yaml (default: {' '.join(DEFAULT_OVERRIDES)})")
    parser.add_argument("--work-dir", type=Path, default=DEFAULT_WORK_DIR,
                        help="the run directory and the prepared corpus, reused by the next run")
    parser.add_argument("--warmup", type=int, default=2, help="untimed training steps first")
    parser.add_argument("--steps", type=int, default=4, help="training steps profiled, then timed")
    parser.add_argument("--val-batches", type=int, default=2, help="validation steps profiled, then timed")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--device", type=torch.device, default=torch.device("cpu"),
                        help="where the steps run: cpu (default) or cuda[:N]")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.val_batches < 1 or args.warmup < 0:
        parser.error("--steps and --val-batches must be at least 1, --warmup at least 0")
    if args.device.type not in ("cpu", "cuda") or (args.device.type == "cuda" and not torch.cuda.is_available()):
        parser.error(f"--device {args.device}: expected cpu, or cuda where torch sees a CUDA device "
                     f"(torch {torch.__version__} sees {torch.cuda.device_count()})")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    kept = keep_freed_memory()  # as hiersum train does (hiersum.allocator)
    if args.threads:
        torch.set_num_threads(args.threads)
    with stdout_to_stderr():
        run = build_run(list(args.overrides), args.work_dir)
        figures = measure(run, args.warmup, args.steps, args.val_batches, args.device)
    report = {
        "overrides": list(args.overrides), "work_dir": str(args.work_dir), "precision": precision(run.config),
        "torch": torch.__version__, "threads": torch.get_num_threads(), "cpu": cpu_name(), "keep_freed_memory": kept,
        "device": str(args.device),
        "gpu": torch.cuda.get_device_name(args.device) if args.device.type == "cuda" else None,
        "load_average": [round(load, 2) for load in os.getloadavg()],
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "parameters": sum(p.numel() for p in run.module.parameters()),
        "warmup": args.warmup, "steps": args.steps, "val_batches": args.val_batches, **figures,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
