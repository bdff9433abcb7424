"""What a run logged, read back: the rows of its CSV log (``logger=csv``), for the tests that compare a resumed run
with the run never stopped."""

from __future__ import annotations

import csv
from pathlib import Path


def csv_rows(run_dir: Path) -> list[dict[str, str]]:
    """The rows of the run's ``csv/metrics.csv``, each ``{column: value}`` ("" where the row logged none)."""
    with open(run_dir / "csv" / "metrics.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def train_rows(run_dir: Path) -> dict[int, tuple[str, ...]]:
    """step -> (train/loss, the learning rate of each parameter group) of the run's metrics.csv."""
    rows = csv_rows(run_dir)
    losses = {int(row["step"]): row["train/loss"] for row in rows if row.get("train/loss")}
    rates: dict[int, tuple[str, ...]] = {}
    for row in rows:
        groups = tuple(value for name, value in sorted(row.items()) if name.startswith("lr-") and value)
        if groups:
            rates[int(row["step"])] = groups
    assert rates, "no learning rate logged"
    return {step: (loss, *rates.get(step, ())) for step, loss in losses.items()}
