"""Lightning callbacks of hiersum.

:class:`EpochSummary` logs one line per training epoch (epoch, step, elapsed time, the epoch's
``train/`` and ``val/`` figures) through ``logging``: it reaches the console and the run's
``train.log`` even when no terminal shows the progress bar (``make train > log``, CI).

:class:`ValidationRouge` decodes a fixed subset of the validation split at the end of every
validation epoch and logs its scores (``conf/callbacks/val_rouge.yaml``: ROUGE F1 as ``val/rouge1``,
``val/rouge2``, ``val/rougeL`` and ``val/rougeLsum``), so that checkpoints can be selected on them::

    hiersum train callbacks=val_rouge callbacks.model_checkpoint.monitor=val/rougeL \\
        callbacks.model_checkpoint.mode=max

:class:`Throughput` logs examples/s, real tokens/s and MFU (``conf/callbacks/default.yaml``).

:class:`ValidateLastStep` validates after a run's last step (``trainer.max_steps``), as Hugging Face's Trainer
evaluates at its end: the checkpoint callbacks then weigh and save the network the run ends with.
"""

from __future__ import annotations

import logging
import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ThroughputMonitor
from pytorch_lightning.trainer.states import RunningStage

from hiersum.config import DecodeConfig
from hiersum.data.schema import Batch
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.inference.batched import summarize_encoded
from hiersum.inference.precision import decoding_precision
from hiersum.model.flops import Peak, device_peak
from hiersum.private_apis import ThroughputMonitorHooks, log_to_loggers, logs_update_now
from hiersum.training.module import HierSumModule

log = logging.getLogger(__name__)


class EpochSummary(pl.Callback):
    """One log line per training epoch on rank 0: ``epoch 3, step 628, 212 s: train/loss 1.43, val/loss 0.41, ...``."""

    _start = 0.0

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._start = time.monotonic()

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not trainer.is_global_zero:
            return
        figures = ", ".join(
            f"{name} {float(value):.4g}" for name, value in sorted(trainer.callback_metrics.items())
            if name.startswith(("train/", "val/"))
        )
        log.info("epoch %d, step %d, %.0f s: %s", trainer.current_epoch, trainer.global_step,
                 time.monotonic() - self._start, figures)


class ValidateLastStep(pl.Callback):
    """Ends the run after step ``trainer.max_steps`` by ``trainer.should_stop``, on which Lightning validates before it
    stops (as it does for a time limit or early stopping): without it a run validating every N steps whose
    ``max_steps`` is not a multiple of N ends unvalidated, and ``model_checkpoint`` (best by ``val/loss``, and
    ``last.ckpt``) never sees its last ``max_steps mod N`` steps. A last step that is a multiple of N is validated
    once. Every rank stops at the same step."""

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if 0 < trainer.max_steps <= trainer.global_step:
            trainer.should_stop = True


Scorer = Callable[[Sequence[str], Sequence[Sequence[str]]], Mapping[str, float]]
"""``scorer(predictions, references per prediction) -> {name: corpus score}``, e.g.
:func:`hiersum.evaluation.metrics.rouge_scores`."""


class ValidationRouge(pl.Callback):
    """Scores (ROUGE F1, 0-100, best reference per example, with the default ``scorer`` of
    ``conf/callbacks/val_rouge.yaml``) of the first ``n_examples`` validation examples, logged as
    ``val/<name>``.

    Args:
        scorer: what scores the summaries (:data:`Scorer`); the config wires
            :func:`hiersum.evaluation.metrics.rouge_scores`, so training does not import the evaluation.
        decode: the decoding settings, a ``DecodeConfig`` (or its fields as a mapping); the config
            composes ``decode/greedy`` with ``max_length`` 60 and ``batch_size`` = ``n_examples``.
        n_examples: size of the fixed subset (the first examples of the validation split).
        batch_tokens: token budget of a decoding batch (None: ``data.batch_tokens`` of the datamodule).

    Every rank decodes the same subset, so the logged value is the same everywhere (no sync needed). Decoded in
    the training's precision (:data:`hiersum.inference.precision.PRECISIONS`), on the network as it trains. Skipped
    during Lightning's sanity check.
    """

    def __init__(
        self, *, scorer: Scorer, decode: DecodeConfig | Mapping[str, Any], n_examples: int = 16,
        batch_tokens: int | None = None,
    ) -> None:
        if n_examples < 1:
            raise ValueError(f"ValidationRouge: n_examples must be >= 1, found {n_examples}")
        self.scorer = scorer
        self.decode = decode if isinstance(decode, DecodeConfig) else DecodeConfig(**decode)
        self.n_examples = n_examples
        self.batch_tokens = batch_tokens
        self._tokenizer: SubwordTokenizer | None = None

    def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: HierSumModule) -> None:
        if trainer.sanity_checking:
            return
        datamodule = trainer.datamodule
        encoded = datamodule.load_split("validation")[: self.n_examples]
        if self._tokenizer is None:
            self._tokenizer = pl_module.tokenizer()
        batch_tokens = self.batch_tokens or datamodule.config.batch_tokens
        predictions = [""] * len(encoded)
        for indices, summaries in summarize_encoded(
            pl_module.model, encoded, self._tokenizer, self.decode, batch_tokens=batch_tokens, device=pl_module.device,
            precision=str(trainer.precision),
        ):
            for index, summary in zip(indices, summaries, strict=True):
                predictions[index] = summary.summary
        scores = self.scorer(predictions, [example.references for example in encoded])
        for name, value in scores.items():
            pl_module.log(f"val/{name}", value, batch_size=len(encoded))


def batch_examples(batch: Batch) -> int:
    """The examples of a batch (``samples`` of the throughput)."""
    return int(batch.src.shape[0])


def batch_real_tokens(batch: Batch) -> int:
    """The real source and target tokens of a batch (``items`` of the throughput: padding not counted)."""
    return int(batch.src_mask.sum()) + int(batch.tgt_mask.sum())


BUSY_LOAD_MARGIN = 0.5
"""How far the median 1-minute load average of a CPU run may exceed the cores before :class:`Throughput` calls the
machine busy: a run's own threads bring the load to about the cores (``cnndm_cpu`` alone on an idle 2-core machine:
2.0), another tenant busy on one core adds 1."""
BUSY_WINDOWS = 3
"""How many training windows in a row must see the load above the cores (by :data:`BUSY_LOAD_MARGIN`) before
:class:`Throughput` warns while the run trains: a 1-minute load average that still remembers the corpus preparation
before the first step is above them for one window or two, not three."""


class Throughput(ThroughputMonitorHooks, ThroughputMonitor):
    """Lightning's ``ThroughputMonitor`` on hiersum batches: examples/s (``samples_per_sec``), real tokens/s
    (``items_per_sec``, source and target, padding not counted), FLOP/s of the model on the real tokens
    (:mod:`hiersum.model.flops`, the module's ``flops_per_batch``) and MFU (``device/mfu``) against the peak
    FLOP/s of one device (:attr:`peak`, logged once with its source): ``available_flops`` when given, else the
    GPU's data-sheet peak for the precision's matrix products (:func:`hiersum.model.flops.device_peak`;
    Lightning's figure for a GPU not in its table), else (a CPU) the machine's matrix-product roof, measured
    once and cached (:func:`hiersum.model.flops.cpu_roof`; ``remeasure_roof`` measures it again). A window
    whose FLOP/s exceed the peak logs no MFU (the peak is then wrong, not the run): a warning says so, once.
    Logged as ``train|...`` and ``validate|...`` every ``trainer.log_every_n_steps``, rolling over
    ``window_size`` batches. On a CPU the machine's load average is read with each training window: a run whose
    median load exceeded the cores by more than :data:`BUSY_LOAD_MARGIN` ends with a warning that its MFU measured
    the CPU share it got (two default runs under a load of 8-9 on 2 cores logged medians of 1.0% and 2.1%, against
    43.5% on an idle machine). It is told at once, too, when :data:`BUSY_WINDOWS` windows in a row see that load,
    with what to do: another job's threads and the run's stall each other (docs/training.md, Two jobs on one CPU:
    a NeuS epoch took 991 s beside an evaluation, 153 s alone), and a run that is told an hour later has lost the
    hour."""

    def __init__(self, available_flops: float | None = None, window_size: int = 50,
                 remeasure_roof: bool = False) -> None:
        super().__init__(batch_size_fn=batch_examples, length_fn=batch_real_tokens, window_size=window_size)
        self.configured_flops = available_flops
        self.remeasure_roof = remeasure_roof
        self.peak: Peak | None = None
        """The peak MFU is measured against (None: no MFU)."""
        self._warned_above_peak = False
        self._load_averages: list[float] | None = None
        """The 1-minute load average at each training window of a CPU run (None: not a CPU run)."""
        self._warned_busy = False

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        super().setup(trainer, pl_module, stage)
        lightning_flops = self.available_flops
        if self.configured_flops is not None:
            self.peak = Peak(float(self.configured_flops), "callbacks.throughput.available_flops")
        else:
            self.peak = self._device_peak(trainer, decoding_precision(str(trainer.precision)).computes)
            if self.peak is None and lightning_flops:
                self.peak = Peak(float(lightning_flops), "Lightning's get_available_flops")
        if self.peak is not None and trainer.is_global_zero:
            log.info("throughput: MFU against %.1f GFLOP/s per device (%s)", self.peak.flops / 1e9, self.peak.source)
        self.available_flops = None if self.peak is None else self.peak.flops
        for throughput in self.throughputs.values():
            throughput.available_flops = self.available_flops
        if trainer.strategy.root_device.type == "cpu" and hasattr(os, "getloadavg"):
            self._load_averages = []

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Warn when the machine was busy while the run trained (module docstring of the class)."""
        if not self._load_averages or not trainer.is_global_zero:
            return
        cores = os.cpu_count() or 1
        load = statistics.median(self._load_averages)
        if load > cores + BUSY_LOAD_MARGIN:
            log.warning("throughput: the machine was busy while this run trained (median load average %.1f on %d "
                        "cores): its MFU measures the share of the CPU it got; compare the MFU of runs on an idle "
                        "machine", load, cores)

    def _warn_when_busy(self, trainer: pl.Trainer) -> None:
        """Warn once, while the run trains, when the last :data:`BUSY_WINDOWS` windows all saw the machine busy."""
        recent = (self._load_averages or [])[-BUSY_WINDOWS:]
        cores = os.cpu_count() or 1
        if (self._warned_busy or not trainer.is_global_zero or len(recent) < BUSY_WINDOWS
                or min(recent) <= cores + BUSY_LOAD_MARGIN):
            return
        self._warned_busy = True
        log.warning("throughput: the machine is busy (load average %s on %d cores): another job shares the cores, "
                    "and threads that wait on each other spin, so each step can take several times as long. Run "
                    "such jobs one after the other, or give each its share of the threads (OMP_NUM_THREADS=1 on "
                    "each of two jobs on 2 cores): docs/training.md, Two jobs on one CPU",
                    " / ".join(f"{load:.1f}" for load in recent), cores)

    def _device_peak(self, trainer: pl.Trainer, dtype: torch.dtype) -> Peak | None:
        """:func:`device_peak`; CPU processes of one machine do not measure its roof at once (they would slow each
        other down): the first of each machine measures it, the others read it from the cache after a barrier."""
        device = trainer.strategy.root_device
        if device.type != "cpu" or trainer.world_size == 1:
            return device_peak(device, dtype, remeasure=self.remeasure_roof)
        peak = device_peak(device, dtype, remeasure=self.remeasure_roof) if trainer.local_rank == 0 else None
        trainer.strategy.barrier("hiersum-cpu-roof")
        return peak or device_peak(device, dtype)

    def log_window(self, trainer: pl.Trainer, iter_num: int | None = None) -> None:
        """What Lightning's monitor logs at the end of a batch (its ``_compute``, :class:`ThroughputMonitorHooks`),
        less an MFU above 100%."""
        if not logs_update_now(trainer):
            return
        stage = trainer.state.stage
        throughput = self.throughputs[stage]
        metrics = throughput.compute()
        mfu_key = f"device{throughput.separator}mfu"
        if metrics.get(mfu_key, 0.0) > 1.0:
            del metrics[mfu_key]
            if not self._warned_above_peak:
                self._warned_above_peak = True
                log.warning("throughput: the model ran at %.1f GFLOP/s, above the peak of %.1f (%s): no MFU logged; "
                            "set callbacks.throughput.available_flops, or measure the roof again when the machine "
                            "is idle (callbacks.throughput.remeasure_roof=true)",
                            metrics[f"device{throughput.separator}flops_per_sec"] / 1e9, self.peak.flops / 1e9,
                            self.peak.source)
        if self._load_averages is not None and stage == RunningStage.TRAINING:
            self._load_averages.append(os.getloadavg()[0])
            self._warn_when_busy(trainer)
        log_to_loggers(trainer, {f"{stage.value}{throughput.separator}{k}": v for k, v in metrics.items()}, iter_num)

