"""``hiersum average-checkpoints``: average the weights of several checkpoints into a new one
(:func:`average`).

With a run directory, the ranking is ModelCheckpoint's own (its ``best_k_models`` and monitored
metric, read from the newest checkpoint of ``<run>/checkpoints``), so train with
``callbacks.model_checkpoint.save_top_k=K`` (and e.g. ``monitor=val/rougeL mode=max``). The result is
an evaluation checkpoint (:mod:`hiersum.checkpoints.averaging`). Default output:
``<run>/checkpoints/averaged-top<K>.ckpt`` or ``averaged.ckpt`` beside the first checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hiersum.checkpoints.averaging import average_checkpoints, ranked_checkpoints
from hiersum.data.overwrite import refuse_overwriting_inputs
from hiersum.errors import UsageError


@dataclass(frozen=True)
class AverageConfig:
    """The options of ``hiersum average-checkpoints``."""

    inputs: list[str]
    """A run directory, or the checkpoints to average."""
    top_k: int | None = None
    """With a run directory: its K best checkpoints (None: all)."""
    output: str | None = None
    """The averaged checkpoint (None: see the module docstring)."""

    def __post_init__(self) -> None:
        if not self.inputs:
            raise UsageError("expected a run directory or the checkpoints to average, found none")
        if self.top_k is not None and self.top_k < 1:
            raise UsageError(f"--top-k must be >= 1, found {self.top_k}")


def average(cfg: AverageConfig) -> Path:
    """Average the checkpoints ``cfg`` names; returns the averaged checkpoint's path. A checkpoint that
    cannot be averaged (:class:`~hiersum.checkpoints.averaging.AverageError`), or an output that is one of
    the inputs, is a :class:`UsageError`."""
    if len(cfg.inputs) == 1 and Path(cfg.inputs[0]).is_dir():
        ranked, monitor = ranked_checkpoints(cfg.inputs[0])
        paths = ranked[: cfg.top_k or len(ranked)]
        default = Path(cfg.inputs[0]) / "checkpoints" / f"averaged-top{len(paths)}.ckpt"
        output = Path(cfg.output) if cfg.output else default
        print(f"averaging the {len(paths)} best checkpoints by {monitor}: {', '.join(p.name for p in paths)}")
    else:
        paths = [Path(p) for p in cfg.inputs]
        output = Path(cfg.output) if cfg.output else paths[0].parent / "averaged.ckpt"
    refuse_overwriting_inputs({"--output": output}, {"the checkpoints to average": paths})
    return average_checkpoints(paths, output)
