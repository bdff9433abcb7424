"""The experiment trackers a run can log to beside its run directory: MLflow (``logger=mlflow``, one store that
every run of a project writes to and ``mlflow ui`` compares) and Weights & Biases (``logger=wandb``, offline, uploaded
later with ``wandb sync``). docs/training.md, "Tracking runs".

Lightning's loggers already receive the training curves (``log_metrics``) and the module's hyperparameters. A tracker
gets the rest of the run here: the rest of the config when the fit starts (:func:`log_run_config`), and when the
report is written, the evaluation's figures as metrics, the library versions and the machine as hyperparameters, and
the report's files (:func:`log_run_results`). The run directory's own CSV and TensorBoard logs get none of it: the run
directory holds it already.

A tracker's package is an extra of hiersum, checked before anything is prepared (:func:`prepare_trackers`).
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytorch_lightning.loggers import Logger

from hiersum.errors import UsageError

MLFLOW_FILE_STORE = "MLFLOW_ALLOW_FILE_STORE"
"""MLflow 3.13 and later refuse a file store (``file:`` or a folder) unless this variable is true: it is kept, in
maintenance, for what hiersum uses it for (one folder that many jobs write to, copied or ``rsync``-ed anywhere)."""
FACTS = ("versions", "machine")
"""The entries of ``metrics.json`` that describe where the figures come from: hyperparameters, not metrics."""
NOT_FIGURES = (*FACTS, "decode")
"""The entries of ``metrics.json`` that hold no figure of the run (``decode``: the search settings, in the config)."""


def _mlflow_store(logger: Any, files: Sequence[Path], run_dir: Path) -> None:
    for path in files:
        folder = path.parent.relative_to(run_dir).as_posix()
        logger.experiment.log_artifact(logger.run_id, str(path), None if folder == "." else folder)


def _mlflow_end(logger: Any) -> None:
    logger.finalize("success")  # the run's end time after the evaluation, not the fit's


def _wandb_store(logger: Any, files: Sequence[Path], run_dir: Path) -> None:
    for path in files:  # the run's files (offline: linked into its folder, uploaded by wandb sync)
        logger.experiment.save(str(path), base_path=str(run_dir), policy="now")


def _wandb_end(logger: Any) -> None:
    logger.experiment.finish()  # the offline run complete when the command returns, not at the process's exit


@dataclass(frozen=True)
class Tracker:
    """What hiersum knows of one kind of tracker."""

    name: str
    """As its users call it."""
    package: str
    """The module Lightning's logger imports."""
    extra: str
    """hiersum's extra that installs it."""
    store_files: Callable[[Any, Sequence[Path], Path], None]
    """``store_files(logger, files, run_dir)``: keep ``files`` (in ``run_dir``) with the run, at their paths
    relative to ``run_dir``."""
    end: Callable[[Any], None]
    """End the tracker's run."""


TRACKERS = {
    "MLFlowLogger": Tracker("MLflow", "mlflow", "mlflow", _mlflow_store, _mlflow_end),
    "WandbLogger": Tracker("Weights & Biases", "wandb", "wandb", _wandb_store, _wandb_end),
}
"""The trackers by the name of their Lightning logger class (the ``_target_`` of a ``logger`` node)."""


def tracker_of(logger: Logger) -> Tracker | None:
    """The :data:`TRACKERS` entry of ``logger``'s class (or of a class it derives from), None for another logger."""
    return next((TRACKERS[cls.__name__] for cls in type(logger).__mro__ if cls.__name__ in TRACKERS), None)


def prepare_trackers(group: Mapping[str, Any]) -> None:
    """Before the ``logger`` group is instantiated: a tracker whose package is not installed is a
    :class:`UsageError` naming the extra, and an MLflow file store is allowed (:data:`MLFLOW_FILE_STORE`, unless the
    environment sets it)."""
    for key, node in group.items():
        target = str((node or {}).get("_target_", ""))
        tracker = TRACKERS.get(target.rpartition(".")[2])
        if tracker is None:
            continue
        if importlib.util.find_spec(tracker.package) is None:
            raise UsageError(f"logger.{key} needs {tracker.name}, the {tracker.extra} extra: "
                             f"pip install -e '.[{tracker.extra}]'")
        uri = str(node.get("tracking_uri") or "")
        if tracker.package == "mlflow" and (uri.startswith("file:") or uri and ":" not in uri):
            os.environ.setdefault(MLFLOW_FILE_STORE, "true")


def log_run_config(loggers: Sequence[Logger], params: Mapping[str, Any]) -> None:
    """Log ``params`` (the run's config, less what the module's hyperparameters hold) to each tracker."""
    for logger in loggers:
        if tracker_of(logger) is not None:
            logger.log_hyperparams(dict(params))


def log_run_results(loggers: Sequence[Logger], metrics: Mapping[str, Any], files: Sequence[Path], *, run_dir: Path,
                    step: int) -> None:
    """Hand each tracker the run's results, then end its run: the figures of ``metrics`` (what ``metrics.json``
    holds, :func:`run_figures`) as metrics at training step ``step``, its ``versions`` and ``machine`` as
    hyperparameters (``versions/torch``, ``machine/cpu``, ...), and ``files`` (in ``run_dir``)."""
    facts = {key: metrics[key] for key in FACTS if metrics.get(key)}
    figures = run_figures(metrics)
    for logger in loggers:
        tracker = tracker_of(logger)
        if tracker is None:
            continue
        if facts:
            logger.log_hyperparams(facts)
        if figures:
            logger.log_metrics(figures, step=step)
        tracker.store_files(logger, files, run_dir)
        tracker.end(logger)


def run_figures(metrics: Mapping[str, Any]) -> dict[str, float]:
    """Every number of ``metrics`` by its path (``test/model/rougeL``, ``validation_loss``, ``n_examples``), but
    those of :data:`NOT_FIGURES`; strings, booleans and lists (intervals) are left out. A character a tracker refuses
    in a name (MLflow takes letters, digits and ``_-. /``) becomes ``_``."""
    return {re.sub(r"[^A-Za-z0-9_\-. /]", "_", key): float(value) for key, value in _numbers(metrics, "")}


def _numbers(values: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, int | float]]:
    for key, value in values.items():
        if not prefix and key in NOT_FIGURES:
            continue
        if isinstance(value, Mapping):
            yield from _numbers(value, f"{prefix}{key}/")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield f"{prefix}{key}", value
