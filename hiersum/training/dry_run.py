"""``hiersum train dry_run=true``: the memory of a training run before it starts, as ``accelerate estimate-memory``
or DeepSpeed's memory estimators give it: the parameter count, the optimizer state, and the peak memory of one
training step at the configured batch size per device, then what that means for GPUs of 16, 24, 40 and 80 GB.

How: the run's :class:`~hiersum.training.module.HierSumModule` and optimizer are built under PyTorch's
``FakeTensorMode`` (tensors with shapes and dtypes but no storage: nothing is allocated, nothing computed), and one
training step (forward and loss under the precision's Lightning plugin, backward, optimizer step; Adam's state
made beforehand by an update on zero gradients) runs under ``torch.distributed._tools.mem_tracker.MemTracker``,
which sums the bytes of every tensor alive by kind (weights, gradients, optimizer state, activations,
temporaries) and keeps the peak. The batch is the largest the token budget admits, every place a real token:
``data.max_paragraphs`` x ``data.max_paragraph_tokens`` paragraphs of each example and ``data.max_target_tokens``
target tokens, ``data.batch_tokens`` // (P x T) examples (at most ``data.max_batch_size``, at least one).

Each precision's step runs in a forked process of its own (:func:`precision_steps`), and ``MemTracker`` keeps
only the step's peak (:class:`StepPeakTracker`): ``model=paper`` takes 15-19 s of CPU time, against 31-40 s before
(docs/training.md, the dry run).

What it does not count: the CUDA context and the caching allocator's fragmentation (on a GPU, add ~0.5-1 GB), the
data loader, and kernels' workspaces. The network is traced on the CPU: the CUDA attention kernels keep other
small buffers. ``make gpu-check`` records the estimate beside the peak a real step measures
(``scripts/gpu_check.py``, part ``dry_run_paper``).
"""

from __future__ import annotations

import copy
import multiprocessing
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import torch
from pytorch_lightning.plugins.precision import HalfPrecision, MixedPrecision, Precision

from hiersum.config import TrainConfig
from hiersum.data.batching import collate
from hiersum.data.jsonl_output import write_json_atomically
from hiersum.data.schema import Batch, EncodedExample
from hiersum.data.tokenizer import SubwordTokenizer, load_tokenizer, train_tokenizer
from hiersum.model.attention_kernels import attention_as_on_a_gpu
from hiersum.model.encoder_registry import batch_layout, run_tokenizer_config
from hiersum.private_apis import StepPeakOnly, compiling, fake_tensor_mode, mem_tracker_class
from hiersum.training.module import HierSumModule, module_hparams

GPU_SIZES_GB = (16, 24, 40, 80)
"""The GPU memory sizes the table compares the peak with (GB = 10^9 bytes, as GPUs are sold)."""

TABLE_PRECISIONS = ("32-true", "bf16-mixed")
"""The precisions of the table ("fp32 and bf16"), besides the run's own ``trainer.precision``."""

KINDS = {"parameters": "Parameter", "gradients": "Gradient", "optimizer": "Optstate", "activations": "Activation",
         "temporary": "Temp", "total": "Total"}
"""The columns of a :class:`StepMemory` and the keys of ``MemTracker``'s snapshot they read."""


class StepPeakTracker(StepPeakOnly, mem_tracker_class()):
    """``MemTracker`` keeping only what the table reads: the step's peak over all modules. After every operator,
    ``MemTracker`` also updates the peak of each module being run, a walk over every module tracked so far (241
    in ``model=paper``): that walk was over half of a dry run's time (issue 31); :class:`StepPeakOnly` skips it.
    The totals and their breakdown are ``MemTracker``'s own (``tests/training/test_dry_run.py`` compares the
    two); a PyTorch whose ``MemTracker`` lacks the fields read there gets its full bookkeeping instead."""


@dataclass(frozen=True)
class StepMemory:
    """Bytes of one training step at its peak, by kind (``MemTracker``'s categories at the step's peak)."""

    precision: str
    """The ``trainer.precision`` of the step."""
    parameters: int
    gradients: int
    optimizer: int
    activations: int
    temporary: int
    total: int


@dataclass(frozen=True)
class DryRun:
    """What ``hiersum train dry_run=true`` prints (:func:`format_dry_run`)."""

    n_parameters: int
    batch_shape: dict[str, int]
    """B, P, T (grid models; a flat model's L instead of P, T) and S of the measured batch."""
    steps: list[StepMemory]
    measured: dict[str, Any] | None = None
    """On a CUDA run (``trainer.accelerator`` gpu/cuda/auto with a GPU): the peak bytes of a real step in the run's
    precision (``{"precision", "bytes"}``, :func:`measured_peak`), else None."""

    def as_dict(self) -> dict[str, Any]:
        return {"n_parameters": self.n_parameters, "batch": self.batch_shape,
                "steps": [vars(step) for step in self.steps], "measured": self.measured}


def precision_plugin(precision: str, device: str = "cpu") -> tuple[Precision, torch.dtype | None]:
    """Lightning's plugin of ``trainer.precision`` (16-bit as bfloat16, as Lightning falls back to on a CPU), and
    the dtype its ``convert_module`` gives the weights (None: float32)."""
    if precision.endswith("-mixed"):
        return MixedPrecision("bf16-mixed", device), None
    if precision.endswith("-true") and precision != "32-true":
        return HalfPrecision("bf16-true"), torch.bfloat16
    return Precision(), None


def worst_batch(cfg: TrainConfig, tokenizer: SubwordTokenizer) -> Batch:
    """The largest batch of the token budget (module docstring), every token real, ids drawn at random."""
    data = cfg.data
    P, T, S = data.max_paragraphs, data.max_paragraph_tokens, data.max_target_tokens
    B = max(1, min(data.max_batch_size, data.batch_tokens // max(P * T, S + 1)))
    generator = torch.Generator().manual_seed(0)
    low = max(tokenizer.special.pad, tokenizer.special.bos, tokenizer.special.eos) + 1

    def ids(n: int) -> list[int]:
        return torch.randint(low, tokenizer.vocab_size, (n,), generator=generator).tolist()

    examples = [EncodedExample(id=str(b), paragraphs=[ids(T) for _ in range(P)], target=ids(S), references=[],
                               provenance=[(0, p) for p in range(P)]) for b in range(B)]
    special = tokenizer.special
    return collate(examples, pad_id=special.pad, bos_id=special.bos, eos_id=special.eos,
                   flat=batch_layout(cfg.model, tokenizer), max_paragraph_tokens=T)


def run_tokenizer(cfg: TrainConfig) -> SubwordTokenizer:
    """The run's tokenizer when it is a file (``tokenizer.path``, or the pretrained encoder's); else a stand-in for
    the special ids, the model being built with ``tokenizer.vocab_size`` entries (what a trained one has at most)."""
    config = run_tokenizer_config(cfg.tokenizer, cfg.model)
    if config.path is not None:
        return load_tokenizer(config.path)
    return train_tokenizer(["a dry run of the training"], vocab_size=64)


def fake_cpu_tensors(module: torch.nn.Module, dtype: torch.dtype | None = None) -> torch.nn.Module:
    """``module`` (on the meta device) with every parameter and buffer replaced by an empty CPU tensor of its shape
    (floating ones of ``dtype`` when given, as the plugin's ``convert_module`` would make them), under the ambient
    ``FakeTensorMode`` (so: no storage); tied weights stay tied. (``Module.to_empty`` and ``Module.to`` cannot: they
    swap fake tensors in, which a tied weight refuses.)"""
    replaced: dict[int, torch.Tensor] = {}
    for submodule in module.modules():
        tensors = [*submodule.named_parameters(recurse=False, remove_duplicate=False),
                   *submodule.named_buffers(recurse=False, remove_duplicate=False)]
        for name, tensor in tensors:
            if id(tensor) not in replaced:
                empty = torch.empty_like(tensor, device="cpu",
                                         dtype=dtype if dtype and tensor.is_floating_point() else None)
                replaced[id(tensor)] = torch.nn.Parameter(empty, tensor.requires_grad) \
                    if isinstance(tensor, torch.nn.Parameter) else empty
            setattr(submodule, name, replaced[id(tensor)])
    return module


@dataclass(frozen=True)
class FakeTraining:
    """The run's module and optimizer with fake weights (no storage) of one dtype, Adam's state already made: what
    :func:`step_memory` steps. The precisions of one weight dtype (fp32: ``32-true`` and ``bf16-mixed``) share
    one; a step leaves it as it found it (no gradients, the same state tensors)."""

    fake: Any
    """The ``FakeTensorMode`` they were made under (:func:`hiersum.private_apis.fake_tensor_mode`)."""
    module: HierSumModule
    optimizer: torch.optim.Optimizer


def fake_training(cfg: TrainConfig, tokenizer: SubwordTokenizer, vocab_size: int,
                  weight_dtype: torch.dtype | None) -> FakeTraining:
    """The :class:`FakeTraining` of the run with floating weights of ``weight_dtype`` (None: float32)."""
    hparams = {**module_hparams(cfg.model, cfg.optim, cfg.data, tokenizer), "vocab_size": vocab_size,
               "tokenizer_json": None}
    with torch.device("meta"):  # shapes only (torchmetrics' states cannot be built as fake tensors)
        module = HierSumModule(**hparams)
    with fake_tensor_mode(allow_non_fake_inputs=True) as fake:
        module = fake_cpu_tensors(module, weight_dtype).train()
        optimizer = module.configure_optimizers()["optimizer"]
        for parameter in module.parameters():  # an update on zero gradients creates the optimizer's state
            parameter.grad = torch.zeros_like(parameter) if parameter.requires_grad else None
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return FakeTraining(fake, module, optimizer)


def step_memory(training: FakeTraining, batch: Batch, precision: str) -> tuple[int, StepMemory]:
    """(parameter count, :class:`StepMemory`) of a training step of ``training`` in ``precision`` (whose weight
    dtype the module has)."""
    plugin, _ = precision_plugin(precision)
    module, optimizer = training.module, training.optimizer
    with training.fake:
        step_batch = plugin.convert_input(batch)
    n_parameters = sum(parameter.numel() for parameter in module.parameters())
    tracker = StepPeakTracker()
    tracker.track_external(module, optimizer)
    # traced as torch.compile traces: the model reads no tensor value into Python (there is none to read)
    with training.fake, tracker, compiling(), attention_as_on_a_gpu():  # its figures are for GPUs
        with plugin.forward_context():  # HierSumModule.loss, less its count of target tokens (a value)
            loss = module.smoothed_nll(step_batch, module.teacher_forced(step_batch))
        plugin.backward(loss, module, optimizer)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    (peak,) = tracker.get_tracker_snapshot("peak").values()
    return n_parameters, StepMemory(precision, **{field: int(peak.get(key, 0)) for field, key in KINDS.items()})


def precision_steps(trainings: dict[torch.dtype | None, FakeTraining], batch: Batch,
                    precisions: list[str]) -> list[tuple[int, StepMemory]]:
    """:func:`step_memory` of each precision (on ``trainings`` of its weight dtype), each in a forked process of
    its own where the platform forks: a step is single-threaded Python (fake tensors compute nothing), so the
    machine's other cores run the other precisions. A step whose process fails runs again here, to raise its
    error; elsewhere than Linux and macOS they run one after the other."""
    jobs = [(trainings[precision_plugin(precision)[1]], precision) for precision in precisions]
    if len(jobs) == 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [step_memory(training, batch, precision) for training, precision in jobs]
    context = multiprocessing.get_context("fork")
    children = []
    for training, precision in jobs:
        receiver, sender = context.Pipe(duplex=False)
        child = context.Process(target=_send_step_memory, args=(sender, training, batch, precision), daemon=True)
        child.start()
        sender.close()
        children.append((child, receiver))
    results = []
    for (child, receiver), (training, precision) in zip(children, jobs, strict=True):
        try:
            results.append(receiver.recv())
        except EOFError:  # the child died before sending: run it here, for its error
            results.append(step_memory(training, batch, precision))
        finally:
            receiver.close()
            child.join()
    return results


def _send_step_memory(sender: Connection, training: FakeTraining, batch: Batch, precision: str) -> None:
    """A forked process of :func:`precision_steps`: send :func:`step_memory` of ``precision``."""
    sender.send(step_memory(training, batch, precision))
    sender.close()


def measured_peak(cfg: TrainConfig, tokenizer: SubwordTokenizer, batch: Batch, precision: str, vocab_size: int,
                  device: torch.device) -> int:
    """The peak bytes CUDA's allocator held during a real training step of ``precision`` on ``device`` (as
    :func:`step_memory` runs it): what the estimate is checked against on a GPU (``make gpu-check``)."""
    plugin, weight_dtype = precision_plugin(precision, device.type)
    hparams = {**module_hparams(cfg.model, cfg.optim, cfg.data, tokenizer), "vocab_size": vocab_size,
               "tokenizer_json": None}
    module = HierSumModule(**hparams).to(device, dtype=weight_dtype).train()
    optimizer = module.configure_optimizers()["optimizer"]
    for parameter in module.parameters():
        parameter.grad = torch.zeros_like(parameter) if parameter.requires_grad else None
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    step_batch = plugin.convert_input(copy.deepcopy(batch).to(device))
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    with plugin.forward_context():
        loss = module.smoothed_nll(step_batch, module.teacher_forced(step_batch))
    plugin.backward(loss, module, optimizer)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device)


def dry_run(cfg: TrainConfig) -> DryRun:
    """The memory of a training step of ``cfg`` in fp32, bf16-mixed and the run's precision (module docstring)."""
    tokenizer = run_tokenizer(cfg)
    vocab_size = tokenizer.vocab_size if run_tokenizer_config(cfg.tokenizer, cfg.model).path else \
        cfg.tokenizer.vocab_size
    batch = worst_batch(cfg, tokenizer)
    precisions = dict.fromkeys([*TABLE_PRECISIONS, str(cfg.trainer.precision or "32-true")])
    trainings = {}
    for precision in precisions:
        weight_dtype = precision_plugin(precision)[1]
        if weight_dtype not in trainings:
            trainings[weight_dtype] = fake_training(cfg, tokenizer, vocab_size, weight_dtype)
    results = precision_steps(trainings, batch, list(precisions))
    n_parameters, steps = results[0][0], [memory for _, memory in results]
    shape = dict(zip("BPT", batch.src.shape, strict=False)) if batch.src.dim() == 3 else \
        dict(zip("BL", batch.src.shape, strict=True))
    measured = None
    if str(cfg.trainer.accelerator) in ("gpu", "cuda", "auto") and torch.cuda.is_available():
        measured = {"precision": steps[-1].precision, "bytes": measured_peak(
            cfg, tokenizer, batch, steps[-1].precision, vocab_size, torch.device("cuda", torch.cuda.current_device()))}
    return DryRun(n_parameters, {**shape, "S": int(batch.tgt_in.shape[1])}, steps, measured)


def format_dry_run(result: DryRun, cfg: TrainConfig) -> str:
    """The table ``hiersum train dry_run=true`` prints."""
    mib = 2**20
    shape = " x ".join(f"{name}={size}" for name, size in result.batch_shape.items())
    lines = [
        f"dry run: model {cfg.model.encoder}, d_model {cfg.model.d_model}, {result.n_parameters / 1e6:.1f} M "
        f"parameters; one training step on the largest batch of data.batch_tokens={cfg.data.batch_tokens} "
        f"({shape}) per device; MiB of the step's peak, by PyTorch's MemTracker under FakeTensorMode",
        "",
        "| precision | weights | gradients | optimizer state | activations | temporary | peak | "
        + " | ".join(f"{size} GB GPU" for size in GPU_SIZES_GB) + " |",
        "|---" * (7 + len(GPU_SIZES_GB)) + "|",
    ]
    for step in result.steps:
        fits = [f"{step.total / (size * 1e9):.1%}" + ("" if step.total < size * 1e9 else " (does not fit)")
                for size in GPU_SIZES_GB]
        lines.append(
            f"| {step.precision} | {step.parameters / mib:,.1f} | {step.gradients / mib:,.1f} | "
            f"{step.optimizer / mib:,.1f} | {step.activations / mib:,.1f} | {step.temporary / mib:,.1f} | "
            f"{step.total / mib:,.1f} | " + " | ".join(fits) + " |")
    lines += ["", "GPU columns: the peak as a share of the GPU's memory; add the CUDA context and the allocator's "
              "fragmentation (~0.5-1 GB). Lower data.batch_tokens to fit."]
    if result.measured:
        lines.append(f"measured on this GPU, one real step in {result.measured['precision']}: peak "
                     f"{result.measured['bytes'] / mib:,.1f} MiB (torch.cuda.max_memory_allocated)")
    return "\n".join(lines)


def print_dry_run(cfg: TrainConfig) -> dict[str, Any]:
    """Print the dry run's table; return its figures (what ``hiersum train dry_run=true`` returns)."""
    result = dry_run(cfg)
    print(format_dry_run(result, cfg))
    figures = {"dry_run": result.as_dict()}
    write_json_atomically(Path(cfg.paths["output_dir"]) / DRY_RUN_FILE, figures)
    return figures


DRY_RUN_FILE = "dry_run.json"
"""The figures of a dry run, in its run directory (what ``make gpu-check`` reads)."""


__all__ = ["DryRun", "StepMemory", "dry_run", "format_dry_run", "print_dry_run"]

