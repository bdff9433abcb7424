"""``hiersum train``: fit the hierarchical summarizer, then decode and score the test split.

Examples::

    hiersum train                                   # small model on the embedded sample corpus
    hiersum train model=tiny debug=fast_dev_run     # smoke test
    hiersum train trainer=ddp trainer.devices=4 data=jsonl data.path=/data/multinews

The fit is :func:`hiersum.training.fit.fit`; the evaluation of its best checkpoint
:func:`hiersum.evaluation.split.evaluate_split`. A corpus without the evaluated split (``eval_split``, the test
split of a release that holds it back) is found out before the fit: the run trains and validates, then ends with
one line saying the scoring was skipped and the ``hiersum evaluate`` command that scores it later. Exit status 2
with a one-line message for a usage error (a bad option or value, a missing or malformed train split).
"""

from __future__ import annotations

import copy
import logging
import shlex
from collections.abc import Collection
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from hiersum.checkpoints.io import load_network
from hiersum.checkpoints.kinds import CheckpointError
from hiersum.commands.common import count_skipped, rerun_command
from hiersum.commands.composed import command_config
from hiersum.config import TrainConfig
from hiersum.data.corpus_splits import DATA_ERRORS, existing_split_files
from hiersum.data.formats.registry import format_spec
from hiersum.data.overwrite import refuse_overwriting_inputs
from hiersum.errors import EXIT_INTERRUPTED, EXIT_TERMINATED, RunStopped
from hiersum.evaluation.report_files import report_outputs
from hiersum.training.dry_run import print_dry_run
from hiersum.training.fit import FitStopped, fit
from hiersum.training.init_from import StartingPoint, dry_run_config, read_starting_point
from hiersum.training.launchers import launched_job
from hiersum.training.trackers import log_run_results

log = logging.getLogger(__name__)
USAGE = "hiersum train [group=option ...] [key=value ...]"


def train(cfg: TrainConfig | DictConfig, model_given: Collection[str] = (),
          tokenizer_given: Collection[str] = ()) -> dict[str, Any]:
    """Fit, then (when ``cfg.eval_split``) evaluate the best checkpoint; return the metrics. ``cfg``: the
    typed config, or the composed Hydra config it is converted from (a bad value fails before the fit).
    ``model_given``, ``tokenizer_given``: the fields of those groups the command line gave
    (:func:`hiersum.cli.overrides.given_fields`), which a fine-tuning run (``init_from``) compares with the trained
    network's settings (:mod:`hiersum.training.init_from`); a fresh or resumed run ignores them."""
    start = None
    if isinstance(cfg, DictConfig):  # init_from: typed with the trained network's model settings
        cfg, start = composed_fine_tuning(cfg, model_given)
    cfg = command_config(cfg, TrainConfig, usage=USAGE)
    if cfg.dry_run:
        return print_dry_run(dry_run_config(cfg, model_given, tokenizer_given, start=start))
    inputs = {"tokenizer.path": cfg.tokenizer.path, "init_from": cfg.init_from,
              **existing_split_files(cfg.data, ["train", "validation", str(cfg.eval_split or "test")])}
    refuse_overwriting_inputs(report_outputs(cfg.paths["output_dir"]), inputs)
    eval_split, missing = cfg.eval_split, missing_eval_split(cfg)
    if missing is not None:  # known before the fit, told again at the end with the checkpoint to score
        log.warning("%s: training and validating, without the %s scoring", missing, eval_split)
        cfg = replace(cfg, eval_split=None)
    try:
        fitted = fit(cfg, model_given, tokenizer_given, start=start)
    except FitStopped as stopped:
        raise RunStopped(_stopped_message(stopped, cfg), exit_status=_exit_status(stopped)) from None
    run_dir = fitted.run_dir
    metrics: dict[str, Any] = {"run_dir": str(run_dir), "best_checkpoint": fitted.best_checkpoint,
                               "validation_loss": fitted.validation_loss}
    if fitted.init_from is not None:
        metrics["init_from"] = fitted.init_from
    if fitted.mfu_peak is not None:
        metrics["mfu_peak"] = fitted.mfu_peak
    errors_file = run_dir / DATA_ERRORS
    skipped = count_skipped(metrics, errors_file if errors_file.is_file() else None)
    written: dict[str, Path] = {}
    if cfg.eval_split and fitted.is_global_zero:
        # imported here: the other ranks, and runs that score nothing, start without rouge-score and nltk
        from hiersum.evaluation.report import write_report
        from hiersum.evaluation.scoring import ScoringConfig, with_corpus_text
        from hiersum.evaluation.split import evaluate_split

        # in float32 (a checkpoint loads so; the fitted network is bfloat16 after trainer.precision=bf16-true)
        model = load_network(fitted.best_checkpoint).model if fitted.best_checkpoint else fitted.model.float()
        if cfg.compile:
            model.compile()
        examples, encoded = fitted.datamodule.splits.evaluation_split(cfg.eval_split)
        evaluation = evaluate_split(
            model, examples, encoded, fitted.tokenizer, cfg.decode, split=cfg.eval_split,
            batch_tokens=fitted.datamodule.config.batch_tokens, device=fitted.device,
            scoring=with_corpus_text(ScoringConfig(), fitted.datamodule.config),
        )
        metrics.update(evaluation.metrics)
        written = write_report(run_dir, metrics, evaluation.predictions, rows=evaluation.rows)
        log.info("metrics and report written to %s", run_dir)
    if fitted.is_global_zero:
        log_run_results(fitted.loggers, metrics, tracked_files(run_dir, written), run_dir=run_dir,
                        step=fitted.global_step)
        print(f"run directory: {run_dir}")
        if skipped:
            print(skipped)
            log.info(skipped)
        if missing is not None:
            line = _skipped_scoring(str(eval_split), missing, fitted.best_checkpoint, cfg.data.path)
            print(line)
            log.info(line)
    return metrics


TRACKED_REPORT_FILES = ("metrics", "report", "html")
"""The files of :func:`hiersum.evaluation.report.write_report` a tracker keeps with the run (the predictions and
per-example scores stay in the run directory)."""
TRACKED_CONFIG_FILES = (".hydra/config.yaml", ".hydra/overrides.yaml")
"""The run's config as Hydra saved it (absent when ``train`` is called with a config composed in process)."""


def tracked_files(run_dir: Path, written: dict[str, Path]) -> list[Path]:
    """The files a tracker keeps with the run (:mod:`hiersum.training.trackers`): ``metrics.json``, ``report.md``,
    ``report.html`` (``written``: what :func:`write_report` wrote), and the saved config when there is one."""
    config = [run_dir / name for name in TRACKED_CONFIG_FILES if (run_dir / name).is_file()]
    return [*(written[key] for key in TRACKED_REPORT_FILES if key in written), *config]


def composed_fine_tuning(cfg: DictConfig, model_given: Collection[str]) -> tuple[DictConfig, StartingPoint | None]:
    """A fine-tuning run's composed config (``init_from``) with the ``model`` fields that neither the command line
    nor the experiment file gave (``model_given``) set to the trained network's, before the config is typed: the
    checks across fields of :class:`hiersum.config.ModelConfig` then see the settings the run trains, as
    :func:`hiersum.training.init_from.fine_tuning` makes them (``model.coverage=true`` on a checkpoint with copy
    attention is checked against the checkpoint's ``copy_attention``, not against the preset's, which the run does
    not use); and the starting point read, which the fit takes rather than reading it again. Unchanged and None
    without ``init_from``, or where it does not load: ``fine_tuning`` reads it then and refuses it, unless the run
    continues from a checkpoint of its own. ``cfg`` itself is not changed."""
    if cfg.get("init_from") is None:
        return cfg, None
    try:
        start = read_starting_point(cfg.init_from)
    except CheckpointError:
        return cfg, None
    trained = start.network.model_config
    composed = copy.deepcopy(cfg)
    for field in fields(trained):
        if field.name not in model_given:
            composed.model[field.name] = getattr(trained, field.name)
    return composed, start


def missing_eval_split(cfg: TrainConfig) -> str | None:
    """Why ``cfg.eval_split`` cannot be scored after the fit (the one-line FileNotFoundError of its files: a corpus
    released without its test split), else None. The train and validation splits are never skipped: the fit needs
    them."""
    split = cfg.eval_split
    if not split or split in ("train", "validation"):
        return None
    try:
        format_spec(cfg.data.format).input_files(cfg.data.path, split)
    except FileNotFoundError as error:
        return str(error)
    return None


def _skipped_scoring(split: str, missing: str, checkpoint: str | None, data_path: str) -> str:
    """The one line a run without its evaluation split ends with: why, and the command that scores it later with
    ``checkpoint`` (the run's best; None: the run saved none, as with ``callbacks=none``)."""
    if checkpoint is None:
        return (f"skipped the {split} scoring: {missing}; this run saved no checkpoint to score it with "
                "(its callbacks have no model_checkpoint)")
    command = shlex.join(["hiersum", "evaluate", f"checkpoint={checkpoint}", f"data.path={data_path}",
                          f"split={split}"])
    return f"skipped the {split} scoring: {missing}; score it once it is there: {command}"


def _stopped_message(stopped: FitStopped, cfg: TrainConfig) -> str:
    """What a stopped fit saved, what to change (out of memory) and the command that resumes it."""
    run_dir = cfg.paths["output_dir"]
    saved = f"the newest checkpoint is {stopped.saved}" if stopped.saved else "no checkpoint was saved yet"
    resume = rerun_command("train", **{"hydra.run.dir": str(run_dir), "ckpt_path": "last"})
    if stopped.cause == "out of memory":
        return (f"out of memory at step {stopped.step}: lower data.batch_tokens (now {cfg.data.batch_tokens}) or "
                f"data.max_batch_size (now {cfg.data.max_batch_size}); {saved}; resume with the lower setting: "
                f"{resume}")
    if stopped.rank_lost:
        return _rank_lost_message(stopped, str(run_dir))
    return f"stopped by {stopped.cause} at step {stopped.step}: {saved}; resume: {resume}"


def _rank_lost_message(stopped: FitStopped, run_dir: str) -> str:
    """Which rank was lost, and the command that resumes from the newest checkpoint (``last.ckpt``, unless the
    kill fell between a step checkpoint and its ``last.ckpt``); torchrun restarts the workers from it by
    itself while it has restarts left."""
    job = launched_job()
    if stopped.saved is None:
        return (f"{stopped.cause} at step {stopped.step}: the job stopped before its first checkpoint; "
                f"start again: {rerun_command('train', **{'hydra.run.dir': run_dir})}")
    resume = rerun_command("train", **{"hydra.run.dir": run_dir, "ckpt_path": str(stopped.saved)})
    restarts = f"{job.launcher} restarts the job from it by itself; " if job is not None else ""
    return (f"{stopped.cause} at step {stopped.step}: the job stopped; the newest checkpoint is {stopped.saved}; "
            f"{restarts}resume: {resume}")


def _exit_status(stopped: FitStopped) -> int:
    if stopped.cause == "out of memory" or stopped.rank_lost:
        return 1
    return EXIT_TERMINATED if stopped.terminated else EXIT_INTERRUPTED
