"""What a killed run needs to continue exactly: the random state of every rank, atomic checkpoint
files, the checkpoint ``ckpt_path=last`` picks, and a CSV log that continues.

The rest of the state is Lightning's: ``trainer.fit(ckpt_path=...)`` restores the weights, the
optimizer, the LR scheduler, the loops (epoch, global step, batches done) and every callback's
``state_dict``; the training loader's position comes from its ``state_dict``
(:class:`hiersum.data.batching.ResumableDataLoader`).
"""

from __future__ import annotations

import csv
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
import torch.distributed as dist
from pytorch_lightning.loggers import CSVLogger
from pytorch_lightning.plugins.io import TorchCheckpointIO

from hiersum.atomic import write_atomically
from hiersum.private_apis import csv_logger_started

LAST = "last"
"""``ckpt_path=last``: the newest checkpoint of the run directory, or a fresh start when there is none."""


def find_checkpoint(ckpt_path: str | None, run_dir: Path) -> str | None:
    """The checkpoint to resume from: None for a fresh run; ``last``: the newest ``*.ckpt`` of
    ``run_dir/checkpoints``, or the ``hpc_ckpt_N.ckpt`` that Lightning's SLURM auto-requeue saves in the run
    directory (None when there is none yet, so a rerun command starts or continues); any other value:
    that file (read by :func:`hiersum.checkpoints.io.read_training_checkpoint`, which says what is wrong
    with it)."""
    if ckpt_path is None:
        return None
    if ckpt_path == LAST:
        candidates = sorted([*(run_dir / "checkpoints").glob("*.ckpt"), *run_dir.glob("hpc_ckpt_*.ckpt")],
                            key=lambda path: (path.stat().st_mtime, path.name == "last.ckpt"))
        return str(candidates[-1]) if candidates else None
    return ckpt_path


class RandomState(pl.Callback):
    """Saves the torch, numpy and Python random states of every rank in the checkpoint and restores
    this rank's before the first training batch of a resumed run (dropout then draws the numbers the
    uninterrupted run drew)."""

    def __init__(self) -> None:
        self._pending: dict[str, Any] | None = None

    def state_dict(self) -> dict[str, Any]:
        state = _portable(random_states())
        if dist.is_available() and dist.is_initialized():  # every rank saves; rank 0 writes them all
            states: list[Any] = [None] * dist.get_world_size()
            dist.all_gather_object(states, state)
            return {"ranks": states}
        return {"ranks": [state]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        ranks = state_dict["ranks"]
        rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
        if rank >= len(ranks):
            raise ValueError(f"the checkpoint holds the random states of {len(ranks)} ranks, this is rank {rank}: "
                             "resume with the number of processes it was saved with")
        self._pending = _native(ranks[rank])

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any,
                             batch_idx: int) -> None:
        if self._pending is not None:
            set_random_states(self._pending)
            self._pending = None


def repair_epoch_progress(trainer: pl.Trainer) -> bool:
    """Mark the running epoch as started when Lightning's epoch counter lags it (during a training batch the
    counter's ``ready`` is one past ``completed``); return whether it did.

    Lightning 2.6.6 leaves the counter one behind for the rest of a run resumed from a checkpoint written on an
    epoch's last batch (before that epoch's validation): ``FitLoop.reset`` completes the epoch, then
    ``on_advance_start`` of the next one, still "restarted mid-epoch", skips marking it started. The batches of
    that run are right, but its later checkpoints say their epoch has not begun, so a second resume from one of
    them trains the epoch's first batches again. Called before every training batch
    (:meth:`hiersum.training.module.HierSumModule.on_train_batch_start`): once, at the first batch of the lagging
    epoch, after which the counter, and every checkpoint written, are the uninterrupted run's."""
    progress = trainer.fit_loop.epoch_progress
    if progress.current.ready != progress.current.completed:
        return False
    progress.increment_ready()
    progress.increment_started()
    return True


def random_states() -> dict[str, Any]:
    """The torch, Python, numpy and (on a GPU machine) CUDA random states of this process, under the keys of
    Lightning's checkpoints (``lightning_fabric.utilities.seed``'s, whose own functions are private)."""
    states = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}
    if torch.cuda.is_available():
        states["torch.cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_random_states(states: dict[str, Any]) -> None:
    """Restore :func:`random_states` (the CUDA states when saved, numpy's when present)."""
    torch.set_rng_state(states["torch"])
    if "torch.cuda" in states:
        torch.cuda.set_rng_state_all(states["torch.cuda"])
    if "numpy" in states:
        np.random.set_state(states["numpy"])
    version, state, gauss = states["python"]
    random.setstate((version, tuple(state), gauss))


def _portable(state: dict[str, Any]) -> dict[str, Any]:
    """The random states with numpy's key array as a tensor: checkpoints load with ``weights_only=True``."""
    name, keys, position, has_gauss, cached_gaussian = state["numpy"]
    return {**state, "numpy": (name, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, cached_gaussian)}


def _native(state: dict[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`_portable`."""
    name, keys, position, has_gauss, cached_gaussian = state["numpy"]
    return {**state, "numpy": (name, keys.numpy().astype(np.uint32), position, has_gauss, cached_gaussian)}


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning's checkpoint IO writing a temporary file beside the target and renaming it: a kill
    during a save leaves the previous ``last.ckpt`` whole, never a truncated file that resume would pick
    (Lightning's own transaction writes its temporary file in the system temp folder, and moving it
    across file systems is a copy)."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Any | None = None) -> None:
        save = super().save_checkpoint
        write_atomically(path, lambda temporary: save(checkpoint, temporary, storage_options))


class ResumableCSVLogger(CSVLogger):
    """Lightning's CSVLogger that continues the ``metrics.csv`` of a resumed run: :meth:`continue_from`
    keeps its rows logged before the checkpoint's step (Lightning's writer deletes the file)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._kept_rows: list[dict[str, str]] = []
        self._kept_keys: list[str] = []

    def continue_from(self, step: int) -> None:
        """Keep the rows of the existing ``metrics.csv`` whose step is below ``step`` (the rows after it
        are logged again by the resumed run)."""
        path = Path(self.log_dir) / "metrics.csv"
        if not path.is_file():
            return
        with open(path, newline="") as handle:
            reader = csv.DictReader(handle)
            self._kept_keys = list(reader.fieldnames or [])
            self._kept_rows = [row for row in reader if row.get("step") and int(float(row["step"])) < step]

    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
        """Flush the rows logged so far with every checkpoint: a resumed run finds them in the file."""
        self.save()

    @property
    def experiment(self) -> Any:
        fresh = not csv_logger_started(self)
        writer = super().experiment
        if fresh and writer is not None and self._kept_rows:
            writer.metrics_keys = sorted(set(self._kept_keys))
            writer.metrics = self._kept_rows
            self._kept_rows = []
            writer.save()  # at once: the writer has just deleted the file
        return writer
