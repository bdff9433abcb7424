"""What several commands share: loading a checkpoint or checking a device as a usage error (the
record-by-record outputs of ``summarize`` and ``rank`` are :mod:`hiersum.commands.record_output`'s)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import torch

from hiersum.checkpoints.io import Summarizer, load_summarizer
from hiersum.config import UsageError
from hiersum.inference.batched import PRECISIONS


def checked_device(device: str, precision: str = "32") -> str:
    """The kind (``cpu`` / ``cuda``) of ``device``; a malformed device, an absent CUDA or a precision the
    device cannot run is a :class:`UsageError`."""
    if precision not in PRECISIONS:
        raise UsageError(f"precision must be one of {', '.join(PRECISIONS)}; found {precision!r}")
    try:
        kind = torch.device(device).type
    except RuntimeError:
        raise UsageError(f"device must be cpu or cuda[:N]; found {device!r}") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise UsageError("device=cuda asked for, but no CUDA device is available")
    if kind == "cpu" and precision == "16":
        raise UsageError("precision=16 needs device=cuda (on cpu use precision=bf16)")
    return kind


def load_checkpoint(checkpoint: str, *, compile: bool = False) -> Summarizer:
    """:func:`load_summarizer`: a missing, unreadable or mismatched checkpoint raises its
    :class:`~hiersum.checkpoints.io.CheckpointError`, a :class:`UsageError` (one line, exit status 2). With
    ``compile``, the model's repeated blocks are compiled in place (:meth:`hiersum.model.HierSum.compile`)."""
    summarizer = load_summarizer(checkpoint)
    if compile:
        summarizer.model.compile()
    return summarizer


def count_skipped(metrics: dict[str, Any], errors_file: Path | None) -> str | None:
    """Put the number of records a run skipped (``data.on_error=skip``: the lines of its ``data_errors.jsonl``)
    in ``metrics`` (metrics.json and the report's Run section: ``records_skipped``, ``records_skipped_file``)
    and return the line a run ends with, ``N records skipped (see PATH)``, or None when none was."""
    count = len(errors_file.read_text(encoding="utf-8").splitlines()) if errors_file else 0
    metrics["records_skipped"] = count
    if not count:
        return None
    metrics["records_skipped_file"] = str(errors_file)
    return f"{count} records skipped (see {errors_file})"


def rerun_command(action: str, **replaced: str) -> str:
    """The command line that runs ``action`` again with this run's options (Hydra's task overrides), the
    options of ``replaced`` set to their values; a description when called in process without Hydra."""
    try:
        from hydra.core.hydra_config import HydraConfig

        overrides = list(HydraConfig.get().overrides.task)
    except ValueError:  # not under Hydra
        return "the same command"
    kept = [option for option in overrides if option.split("=", 1)[0].lstrip("+") not in replaced]
    return shlex.join(["hiersum", action, *kept, *(f"{key}={value}" for key, value in replaced.items())])
