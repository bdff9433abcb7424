"""Averaging the weights of several checkpoints into a new one (``hiersum average-checkpoints``).

With a run directory, the ranking is ModelCheckpoint's own (its ``best_k_models`` and monitored
metric, read from the newest checkpoint of ``<run>/checkpoints``: :func:`ranked_checkpoints`).
Floating point tensors are averaged (in float64, cast back), integer buffers must agree. The result
is the best checkpoint with its weights replaced and its optimizer, scheduler and callback states
dropped (an evaluation checkpoint, not one to resume from); it loads with
:func:`hiersum.checkpoints.io.load_network` (``weights_only=True``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from hiersum.checkpoints.contents import CHECKPOINT_EXTRA_KEY
from hiersum.checkpoints.io import read_checkpoint
from hiersum.errors import UsageError

DROPPED_KEYS = ("optimizer_states", "lr_schedulers", "callbacks", "loops")


class AverageError(UsageError):
    """Checkpoints that cannot be averaged (incompatible, no ranking); one that cannot be read at all raises
    :class:`hiersum.checkpoints.CheckpointError`."""


def ranked_checkpoints(run_dir: str | Path) -> tuple[list[Path], str]:
    """The run's checkpoints ranked best first by its ModelCheckpoint, and the monitored metric."""
    folder = Path(run_dir) / "checkpoints"
    files = sorted(folder.glob("*.ckpt"), key=lambda p: p.stat().st_mtime) if folder.is_dir() else []
    if not files:
        raise AverageError(f"{run_dir}: expected checkpoints in {folder}, found none")
    callbacks = read_checkpoint(files[-1]).get("callbacks", {})
    states = [state for key, state in callbacks.items() if key.startswith("ModelCheckpoint") and state.get("monitor")]
    if not states or not states[0].get("best_k_models"):
        raise AverageError(f"{files[-1]}: no ModelCheckpoint ranking (best_k_models) with a monitored metric; "
                           "give the checkpoints to average explicitly")
    state = states[0]
    scores = {Path(path).name: float(score) for path, score in state["best_k_models"].items()}
    best = Path(state["best_model_path"]).name
    descending = scores.get(best, 0.0) >= max(scores.values())
    ranked = sorted(scores, key=lambda name: scores[name], reverse=descending)
    return [folder / name for name in ranked], str(state["monitor"])


def average_checkpoints(paths: Sequence[str | Path], output: str | Path) -> Path:
    """Average the weights of ``paths`` (the first gives every other entry) into ``output``."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise AverageError("expected at least one checkpoint to average, found none")
    checkpoints = [read_checkpoint(path) for path in paths]
    first = checkpoints[0]
    keys = set(first["state_dict"])
    for path, checkpoint in zip(paths[1:], checkpoints[1:], strict=True):
        if checkpoint["hyper_parameters"].get("model") != first["hyper_parameters"].get("model"):
            raise AverageError(f"{path}: model settings differ from {paths[0]}; only the same model can be averaged")
        if set(checkpoint["state_dict"]) != keys:
            raise AverageError(f"{path}: its weights have other names than those of {paths[0]}")
    averaged = {}
    for key, tensor in first["state_dict"].items():
        tensors = [checkpoint["state_dict"][key] for checkpoint in checkpoints]
        if tensor.is_floating_point():
            averaged[key] = torch.stack([t.double() for t in tensors]).mean(0).to(tensor.dtype)
        elif all(torch.equal(t, tensor) for t in tensors):
            averaged[key] = tensor
        else:
            raise AverageError(f"non-float tensor {key!r} differs between checkpoints; cannot average it")
    result = {key: value for key, value in first.items() if key not in DROPPED_KEYS}
    result["state_dict"] = averaged
    result[CHECKPOINT_EXTRA_KEY] = {**first.get(CHECKPOINT_EXTRA_KEY, {}), "averaged_from": [str(p) for p in paths]}
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    torch.save(result, output)
    return output
