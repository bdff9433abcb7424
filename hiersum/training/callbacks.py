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
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ThroughputMonitor

from hiersum.config import DecodeConfig
from hiersum.data.schema import Batch
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.inference.batched import summarize_encoded
from hiersum.model.flops import matmul_roof, peak_flops
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


Scorer = Callable[[Sequence[str], Sequence[Sequence[str]]], Mapping[str, float]]
"""``scorer(predictions, references per prediction) -> {name: corpus score}``, e.g.
:func:`hiersum.evaluation.metrics.rouge_scores`."""


INFERENCE_PRECISIONS = {"bf16-mixed": "bf16", "16-mixed": "16", "bf16-true": "bf16-true", "16-true": "16"}
"""The decoding precision (:data:`hiersum.inference.batched.PRECISIONS`) of a ``trainer.precision``: autocast
for the mixed ones, the weights left in their dtype for the true ones ("32" for any other)."""


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
    the training's precision (:data:`INFERENCE_PRECISIONS`), on the network as it trains. Skipped during
    Lightning's sanity check.
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
            precision=INFERENCE_PRECISIONS.get(str(trainer.precision), "32"),
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


class Throughput(ThroughputMonitor):
    """Lightning's ``ThroughputMonitor`` on hiersum batches: examples/s (``samples_per_sec``), real tokens/s
    (``items_per_sec``, source and target, padding not counted), FLOP/s of the model on the real tokens
    (:mod:`hiersum.model.flops`, the module's ``flops_per_batch``) and MFU (``device/mfu``) against
    ``available_flops`` per device: given, else the GPU's data-sheet peak for the precision's matrix products
    (:func:`hiersum.model.flops.peak_flops`; Lightning's figure for a GPU not in its table), else (a CPU) the
    measured fp32 matrix-product roof (:func:`hiersum.model.flops.matmul_roof`). Logged as ``train|...`` and
    ``validate|...`` every ``trainer.log_every_n_steps``, rolling over ``window_size`` batches."""

    def __init__(self, available_flops: float | None = None, window_size: int = 50) -> None:
        super().__init__(batch_size_fn=batch_examples, length_fn=batch_real_tokens, window_size=window_size)
        self.configured_flops = available_flops

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        super().setup(trainer, pl_module, stage)
        flops = self.configured_flops
        device = trainer.strategy.root_device
        if flops is None and device.type == "cuda":
            flops = peak_flops(device, MATMUL_DTYPES.get(str(trainer.precision), torch.float32)) or self.available_flops
        if flops is None and device.type == "cpu":
            flops = _cpu_roof() * 1e9
            log.info("throughput: MFU against this CPU's measured fp32 matrix-product roof, %.1f GFLOP/s", flops / 1e9)
        self.available_flops = flops
        for throughput in self._throughputs.values():
            throughput.available_flops = flops


MATMUL_DTYPES = {"bf16-mixed": torch.bfloat16, "bf16-true": torch.bfloat16, "16-mixed": torch.float16,
                 "16-true": torch.float16}
"""The dtype of the matrix products under a ``trainer.precision`` (float32 for any other)."""


@functools.cache
def _cpu_roof() -> float:
    """The CPU's matrix-product roof in GFLOP/s, measured once a process."""
    return matmul_roof("cpu")
