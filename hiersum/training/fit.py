"""Fitting the summarizer from a ``hiersum train`` config: the tokenizer, the datamodule, the
LightningModule, the Trainer with its callbacks and loggers (:func:`fit`).

A problem with the command itself (a bad value, a missing split, a malformed record) raises
:class:`hiersum.errors.UsageError` or :class:`hiersum.data.schema.RecordError`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from hydra.utils import instantiate
from pytorch_lightning.loggers import Logger
from pytorch_lightning.trainer.states import TrainerStatus
from pytorch_lightning.utilities.exceptions import SIGTERMException

from hiersum.checkpoints.contents import checkpoint_tokenizer
from hiersum.checkpoints.io import check_weights, read_training_checkpoint
from hiersum.checkpoints.kinds import RESUME
from hiersum.config import DataConfig, TokenizerConfig, TrainConfig, config_dict
from hiersum.data.corpus_tokenizer import prepare_tokenizer
from hiersum.data.datamodule import SummarizationDataModule
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.inference.batched import is_out_of_memory
from hiersum.model.encoder_registry import run_tokenizer_config, source_layout, validate_choices
from hiersum.model.summarizer import HierSum
from hiersum.training.callbacks import Throughput
from hiersum.training.init_from import StartingPoint, fine_tuning, load_starting_weights
from hiersum.training.launchers import launched_job, torchrun_restart_hazard
from hiersum.training.lost_ranks import lost_rank
from hiersum.training.module import HierSumModule, module_hparams
from hiersum.training.resume import LAST, ResumableCSVLogger, find_checkpoint
from hiersum.training.trackers import log_run_config, prepare_trackers

log = logging.getLogger(__name__)


@dataclass
class FitResult:
    """What :func:`fit` leaves for the evaluation of the run."""

    run_dir: Path
    best_checkpoint: str | None
    """ModelCheckpoint's best checkpoint, else its last one, else None (see :func:`best_checkpoint`)."""
    validation_loss: float | None
    """The last logged ``val/loss``."""
    model: HierSum
    """The network as the fit left it (for a run that saved no checkpoint)."""
    datamodule: SummarizationDataModule
    tokenizer: SubwordTokenizer
    is_global_zero: bool
    """This process is rank 0 (the one that evaluates and reports)."""
    device: torch.device
    """The device this process trained on."""
    mfu_peak: dict[str, Any] | None = None
    """The peak the Throughput callback measured MFU against (:meth:`hiersum.model.flops.Peak.as_dict`)."""
    loggers: list[Logger] = field(default_factory=list)
    """The run's Lightning loggers (the trackers among them get the results: :mod:`hiersum.training.trackers`)."""
    global_step: int = 0
    """The training steps the fit ended at."""
    init_from: dict[str, str] | None = None
    """What a fine-tuning run started from (``init_from``: its path and SHA-256,
    :meth:`hiersum.training.init_from.StartingPoint.record`); None for a network trained from scratch."""


def build_tokenizer(config: TokenizerConfig, data: DataConfig, run_dir: Path) -> SubwordTokenizer:
    """Load ``config.path`` or train a tokenizer on the train split (once: it is cached with the prepared
    corpus, :func:`hiersum.data.corpus_tokenizer.prepare_tokenizer`); save it in the run directory."""
    tokenizer = prepare_tokenizer(config, data)
    tokenizer.save(run_dir / "tokenizer")
    return tokenizer


def instantiate_group(group: Mapping[str, Any] | None) -> list[Any]:
    """Instantiate every ``_target_`` entry of a callbacks/logger group."""
    return [instantiate(node) for node in (group or {}).values() if node is not None and "_target_" in node]


def best_checkpoint(trainer: pl.Trainer) -> str | None:
    """The best checkpoint written by ModelCheckpoint, else the last one, else None."""
    callback = trainer.checkpoint_callback
    candidates = [callback.best_model_path, callback.last_model_path] if callback else []
    return next((path for path in candidates if path and Path(path).is_file()), None)


class FitStopped(Exception):
    """A fit that stopped before its end: Ctrl-C, SIGTERM, a batch that did not fit in memory, or a DDP rank
    that was lost."""

    def __init__(self, cause: str, *, step: int, saved: Path | None, terminated: bool = False,
                 rank_lost: bool = False) -> None:
        super().__init__(cause)
        self.cause = cause
        """``Ctrl-C``, ``SIGTERM``, ``out of memory``, or which rank was lost (``rank 1 (pid 4242) was killed by
        SIGKILL``, :func:`hiersum.training.lost_ranks.lost_rank`)."""
        self.step = step
        """The global step the fit had reached."""
        self.saved = saved
        """The newest checkpoint of the run (what a resume starts from), None when there is none."""
        self.terminated = terminated
        """Stopped by SIGTERM."""
        self.rank_lost = rank_lost
        """Stopped because a DDP rank was lost (``cause`` says which)."""


def newest_checkpoint(run_dir: Path) -> Path | None:
    """The newest ``*.ckpt`` of ``run_dir/checkpoints`` (what ``ckpt_path=last`` resumes from)."""
    found = find_checkpoint("last", run_dir)
    return Path(found) if found else None


def _fit_or_stop(trainer: pl.Trainer, module: HierSumModule, datamodule: SummarizationDataModule,
                 resume: str | None, run_dir: Path) -> None:
    """``trainer.fit``; a fit that Lightning ends after Ctrl-C (``sys.exit(1)``) or SIGTERM
    (``SIGTERMException``), that runs out of memory, or whose DDP collective failed because a rank died,
    raises :class:`FitStopped` instead."""
    parent_pid = os.getppid()  # rank 0 of Lightning's launcher, seen from the ranks it starts
    try:
        trainer.fit(module, datamodule=datamodule, ckpt_path=resume, weights_only=True)
    except SystemExit as stop:
        if trainer.state.status != TrainerStatus.INTERRUPTED:
            raise
        terminated = isinstance(stop, SIGTERMException)
        raise FitStopped("SIGTERM" if terminated else "Ctrl-C", step=trainer.global_step,
                         saved=newest_checkpoint(run_dir), terminated=terminated) from None
    except Exception as error:
        if is_out_of_memory(error):
            raise FitStopped("out of memory", step=trainer.global_step, saved=newest_checkpoint(run_dir)) from None
        lost = lost_rank(trainer, error, parent_pid)
        if lost is None:
            raise
        raise FitStopped(lost, step=trainer.global_step, saved=newest_checkpoint(run_dir), rank_lost=True) from None


def prepared_datamodule(cfg: TrainConfig, tokenizer: SubwordTokenizer, splits: list[str]) -> SummarizationDataModule:
    """The run's datamodule with ``splits`` prepared on disk (or found prepared) and their records' errors written
    into the run directory."""
    datamodule = SummarizationDataModule(cfg.data, tokenizer, seed=cfg.seed, model=cfg.model,
                                         layout=source_layout(cfg.model))
    datamodule.splits.prepare(splits)
    datamodule.splits.write_errors(Path(cfg.paths["output_dir"]))
    return datamodule


def build_module(cfg: TrainConfig, tokenizer: SubwordTokenizer) -> HierSumModule:
    """The LightningModule of a fresh run, its encoder recomputing activations (``activation_checkpointing``) and
    its blocks compiled (``compile``) as the config asks."""
    module = HierSumModule(**module_hparams(cfg.model, cfg.optim, cfg.data, tokenizer, cfg.decode))
    if cfg.activation_checkpointing:
        module.model.recompute_encoder()
    if cfg.compile:
        module.model.compile()
    return module


def fit(cfg: TrainConfig, model_given: Collection[str] = (), tokenizer_given: Collection[str] = (), *,
        start: StartingPoint | None = None) -> FitResult:
    """Seed, build the tokenizer (saved in the run directory), the datamodule and the module, and fit
    them with the Trainer of ``cfg.trainer``. With ``cfg.init_from``, the network, its settings (those of
    ``model_given``, the ``model`` fields the command line gave, on top) and the tokenizer are the trained network's
    (:mod:`hiersum.training.init_from`; ``tokenizer_given``: the ``tokenizer`` fields the command line gave,
    refused there; ``start``: ``init_from`` already read, else it is read here)."""
    validate_choices(cfg)
    prepare_trackers(cfg.logger)  # a tracker's missing package, before anything is prepared
    pl.seed_everything(cfg.seed, workers=True)
    run_dir = Path(cfg.paths["output_dir"])

    job = launched_job()  # torchrun or SLURM: a restarted or requeued job resumes by itself
    if (hazard := torchrun_restart_hazard()) is not None:
        log.warning(hazard)
    resume = find_checkpoint(LAST if cfg.ckpt_path is None and job is not None else cfg.ckpt_path, run_dir)
    # a file that is no training checkpoint: its CheckpointError (one line) before anything is prepared
    checkpoint = read_training_checkpoint(resume) if resume else None
    cfg, start = fine_tuning(cfg, checkpoint, model_given, tokenizer_given, start=start)  # unchanged without init_from
    if checkpoint is not None or start is not None:  # the run's own tokenizer or the trained network's, never trained
        tokenizer = checkpoint_tokenizer(checkpoint, resume, RESUME) if checkpoint is not None else start.tokenizer
        tokenizer.save(run_dir / "tokenizer")
    else:
        tokenizer = build_tokenizer(run_tokenizer_config(cfg.tokenizer, cfg.model), cfg.data, run_dir)
    # every split prepared on disk (or found prepared) before the Trainer starts: its DDP processes find
    # them there, and a missing file or a malformed record is reported in one line
    datamodule = prepared_datamodule(cfg, tokenizer, ["train", "validation", *([cfg.eval_split] if cfg.eval_split
                                                                              else [])])
    module = build_module(cfg, tokenizer)
    if start is not None:
        load_starting_weights(module.model, start)
        module.started_from = start.record()
    loggers = instantiate_group(cfg.logger)
    # the rest of the run's config: Lightning logs the module's hyperparameters itself
    log_run_config(loggers, {key: value for key, value in config_dict(cfg).items() if key not in module.hparams})
    if checkpoint is not None:
        check_weights(resume, module, checkpoint["state_dict"], RESUME)  # not Lightning's multi-line refusal
        for logger in loggers:
            if isinstance(logger, ResumableCSVLogger):
                logger.continue_from(checkpoint["global_step"])
        log.info("resuming from %s (epoch %d, global step %d)%s", resume, checkpoint["epoch"],
                 checkpoint["global_step"], f", {job.describe()}" if job is not None else "")
    del checkpoint
    trainer: pl.Trainer = instantiate(cfg.trainer, callbacks=instantiate_group(cfg.callbacks), logger=loggers)
    _fit_or_stop(trainer, module, datamodule, resume, run_dir)
    loss = trainer.callback_metrics.get("val/loss")
    return FitResult(
        run_dir=run_dir, best_checkpoint=best_checkpoint(trainer),
        validation_loss=float(loss) if loss is not None else None, model=module.model, datamodule=datamodule,
        tokenizer=tokenizer, is_global_zero=trainer.is_global_zero, device=trainer.strategy.root_device,
        mfu_peak=next((callback.peak.as_dict() for callback in trainer.callbacks
                       if isinstance(callback, Throughput) and callback.peak is not None), None),
        loggers=loggers, global_step=trainer.global_step, init_from=module.started_from,
    )
