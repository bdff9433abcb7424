"""Figures of the evaluation report (matplotlib, Agg backend), embedded as base64 PNG.

Each ``*_figure`` function returns a matplotlib ``Figure`` (or None when there is nothing to draw);
:func:`to_base64_png` turns it into the report's ``<img>`` data and closes it.
"""

from __future__ import annotations

import base64
import csv
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.figure import Figure  # noqa: E402

BAR_METRICS = (("rouge1", "R-1"), ("rouge2", "R-2"), ("rougeL", "R-L"), ("rougeLsum", "R-Lsum"),
               ("bleu", "BLEU"), ("chrf", "chrF"))
LOSS_COLUMNS = ("train/loss", "val/loss")
CURVE_COLUMNS = (*LOSS_COLUMNS, "val/perplexity", "val/rougeL")


def to_base64_png(figure: Figure) -> str:
    """The figure as base64 PNG text (for ``<img src="data:image/png;base64,...">``); closes it."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def read_curves(path: str | Path, columns: Sequence[str] = CURVE_COLUMNS) -> dict[str, list[tuple[float, float]]]:
    """(step, value) points of each of ``columns`` (default :data:`CURVE_COLUMNS`) in a Lightning CSV log
    (``<run>/csv/metrics.csv``, one row per logging call, empty cells where not logged)."""
    curves: dict[str, list[tuple[float, float]]] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            step = row.get("step")
            for column in columns:
                value = row.get(column)
                if step not in (None, "") and value not in (None, ""):
                    curves.setdefault(column, []).append((float(step), float(value)))
    return curves


def loss_curves(curves: Mapping[str, Sequence[tuple[float, float]]]) -> list[str]:
    """The loss columns of :data:`LOSS_COLUMNS` that ``curves`` holds points of."""
    return [name for name in LOSS_COLUMNS if curves.get(name)]


def curves_figure(curves: Mapping[str, Sequence[tuple[float, float]]]) -> Figure | None:
    """Training and validation loss against the step; validation perplexity (and ROUGE-L when
    logged) in a second panel. None when the log holds no loss (:func:`loss_curves`)."""
    losses = loss_curves(curves)
    if not losses:
        return None
    others = [name for name in ("val/perplexity", "val/rougeL") if curves.get(name)]
    figure, axes = plt.subplots(1, 1 + len(others), figsize=(5 * (1 + len(others)), 3.5), squeeze=False)
    for name in losses:
        steps, values = zip(*curves[name], strict=True)
        axes[0, 0].plot(steps, values, marker="o" if name.startswith("val") else None, label=name)
    axes[0, 0].set(xlabel="step", ylabel="loss (nats / token)", title="Loss")
    axes[0, 0].legend()
    for axis, name in zip(axes[0, 1:], others, strict=True):
        steps, values = zip(*curves[name], strict=True)
        axis.plot(steps, values, marker="o", color="tab:green")
        axis.set(xlabel="step", ylabel=name, title=name)
    figure.tight_layout()
    return figure


def length_figure(output_lengths: Sequence[float], reference_lengths: Sequence[float], *,
                  label: str = "model") -> Figure:
    """Histograms of output and reference lengths in words, on shared bins."""
    figure, axis = plt.subplots(figsize=(6, 3.5))
    longest = max([*output_lengths, *reference_lengths, 1])
    bins = [i * max(1, math.ceil(longest / 30)) for i in range(32)]
    axis.hist(reference_lengths, bins=bins, alpha=0.6, label="reference (mean over references)")
    axis.hist(output_lengths, bins=bins, alpha=0.6, label=label)
    axis.set(xlabel="length (words)", ylabel="examples", title="Output vs reference length")
    axis.legend()
    figure.tight_layout()
    return figure


def metric_bars_figure(systems: Mapping[str, Mapping[str, Any]]) -> Figure:
    """Grouped bars of ROUGE F1, BLEU and chrF per system, with their bootstrap intervals."""
    names = list(systems)
    figure, axis = plt.subplots(figsize=(10, 3.8))
    width = 0.8 / max(len(names), 1)
    for k, name in enumerate(names):
        figures = systems[name]
        values = [float(figures.get(key, math.nan)) for key, _ in BAR_METRICS]
        intervals = figures.get("ci", {})
        errors = [
            [max(value - intervals[key][0], 0.0) for (key, _), value in zip(BAR_METRICS, values, strict=True)],
            [max(intervals[key][1] - value, 0.0) for (key, _), value in zip(BAR_METRICS, values, strict=True)],
        ] if all(key in intervals for key, _ in BAR_METRICS) else None
        positions = [i + (k - (len(names) - 1) / 2) * width for i in range(len(BAR_METRICS))]
        axis.bar(positions, values, width, yerr=errors, capsize=2, label=name)
    axis.set_xticks(range(len(BAR_METRICS)), [label for _, label in BAR_METRICS])
    axis.set(ylabel="score (0-100)", title="Scores with 95% bootstrap intervals")
    axis.legend(fontsize="small")
    figure.tight_layout()
    return figure


def attention_figure(pooling: Any, inter: Any, *, title: str = "") -> Figure:
    """One example's attention in the last inter-paragraph layer.

    ``pooling`` [P, H, T]: pooling weights of the real paragraphs (averaged over heads into a
    [P, T] map: which tokens make each paragraph's vector); ``inter`` [H, P, P]: inter-paragraph
    attention (averaged over heads: query paragraph x key paragraph).
    """
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    image = left.imshow(pooling.mean(1), aspect="auto", cmap="viridis")
    left.set(xlabel="token", ylabel="paragraph", title="Pooling weights (mean over heads)")
    figure.colorbar(image, ax=left)
    image = right.imshow(inter.mean(0), aspect="auto", cmap="magma")
    right.set(xlabel="key paragraph", ylabel="query paragraph", title="Inter-paragraph attention (mean over heads)")
    figure.colorbar(image, ax=right)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    return figure
