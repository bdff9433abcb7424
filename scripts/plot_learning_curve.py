"""Learning curves of training runs against wall-clock minutes (or steps): validation ROUGE-L and validation loss
(or the logged columns ``--curves`` names), one line per run, from each run's Lightning CSV log
(``<run>/csv/metrics.csv``). The minutes of a point are those of its step in the log's ``train/time`` column
(training seconds since the fit began, logged by the throughput callback), interpolated between logged steps.
``--x steps`` plots against training steps: for runs whose minutes are not comparable (runs that shared the machine).

    python scripts/plot_learning_curve.py outputs/train/cnndm --label "cnndm_cpu" --output docs/images/cnndm.png
    python scripts/plot_learning_curve.py RUN_A RUN_B --x steps --curves val/loss train/loss --output curves.png

Prints the points as JSON (run, step, minutes and the plotted columns), like the benchmarks.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

from hiersum.evaluation.plots import read_curves  # noqa: E402

TIME_COLUMN = "train/time"
CURVES = ("val/rougeL", "val/loss")


def curve_points(run: Path, names: tuple[str, ...] = CURVES) -> list[dict[str, float]]:
    """One point per logged step of ``run`` with any of ``names``: its step, minutes of training and the values."""
    curves = read_curves(run / "csv" / "metrics.csv", columns=(TIME_COLUMN, *names))
    if not curves.get(TIME_COLUMN):
        raise SystemExit(f"{run / 'csv' / 'metrics.csv'}: expected a {TIME_COLUMN} column (the throughput callback)")
    time_steps, seconds = (np.array(values) for values in zip(*curves[TIME_COLUMN], strict=True))
    points: dict[float, dict[str, float]] = {}
    for name in names:
        for step, value in curves.get(name, []):
            point = points.setdefault(step, {"step": step, "minutes": float(np.interp(step, time_steps, seconds)) / 60})
            point[name] = value
    return [points[step] for step in sorted(points)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (each with csv/metrics.csv)")
    parser.add_argument("--label", action="append", default=[], help="a legend label per run (default: its name)")
    parser.add_argument("--output", type=Path, required=True, help="the PNG to write")
    parser.add_argument("--x", choices=("minutes", "steps"), default="minutes", help="the horizontal axis")
    parser.add_argument("--curves", nargs="+", default=list(CURVES), help="the logged columns, one panel each")
    args = parser.parse_args()
    names = tuple(args.curves)
    labels = args.label + [run.name for run in args.runs[len(args.label):]]
    figure, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.5), squeeze=False)
    x_key, x_label = ("minutes", "minutes of training") if args.x == "minutes" else ("step", "training steps")
    report = []
    for run, label in zip(args.runs, labels, strict=True):
        points = curve_points(run, names)
        report.append({"run": str(run), "label": label, "points": points})
        for axis, name in zip(axes[0], names, strict=True):
            xy = [(point[x_key], point[name]) for point in points if name in point]
            if xy:
                axis.plot(*zip(*xy, strict=True), marker="o" if len(xy) < 30 else None, label=label)
    for axis, name in zip(axes[0], names, strict=True):
        axis.set(xlabel=x_label, ylabel=name, title=name)
        axis.legend()
    figure.tight_layout()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.output, dpi=100)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
