"""What several commands share: the records a run skipped, the command line that reruns it (loading a checkpoint
or checking a device as a usage error is :mod:`hiersum.inference.pipeline`'s; the record-by-record outputs of
``summarize`` and ``rank`` are :mod:`hiersum.inference.resumable_output`'s)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any


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
