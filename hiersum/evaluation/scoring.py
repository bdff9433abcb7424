"""Score systems on one split: every metric of :mod:`hiersum.evaluation.metrics`, baselines, bootstrap
intervals and paired tests (:mod:`hiersum.evaluation.stats`), and the per-example rows of ``scores.csv``.

The figures of one system (a dict under ``metrics[split][system]``)::

    rouge1, rouge2, rougeL, rougeLsum            F1 (0-100) against the best-matching reference (max)
    rouge1_precision, rouge1_recall, ...         precision / recall of that reference
    mean_over_references: {rouge1, ...}          the same, averaged over each example's references
    bleu, bleu_signature, chrf, chrf_signature   sacrebleu corpus scores with every reference
    length, reference_length                     mean words of the outputs / of the references
    novel_1gram .. novel_3gram                   % of output n-grams absent from the source
    repeated_1gram .. repeated_3gram             % of output n-grams repeating an earlier one
    ci: {rouge1: [low, high], ..., mean_over_references: {...}}   bootstrap intervals
    n_examples

Every corpus figure is a mean over examples except BLEU and chrF (sacrebleu's corpus statistics);
the bootstrap resamples examples with the same seeded rows for every metric and system.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hiersum.config import BootstrapConfig
from hiersum.data.schema import Example
from hiersum.evaluation.baselines import BASELINES, baseline_summaries
from hiersum.evaluation.metrics import (
    NGRAM_ORDERS,
    ROUGE_KEYS,
    SACREBLEU_METRICS,
    reference_streams,
    rouge_max_and_mean,
    text_statistics,
)
from hiersum.evaluation.stats import (
    Resamplable,
    bootstrap_indices,
    confidence_interval,
    mean_metric,
    paired_bootstrap,
    sacrebleu_metric,
)

TEXT_KEYS = ("length", "reference_length", *(f"{kind}_{n}gram" for kind in ("novel", "repeated")
                                               for n in NGRAM_ORDERS))
MEAN_KEY = "mean_over_references"


@dataclass
class ScoringConfig:
    """What is scored beside the systems."""

    baselines: list[str] = field(default_factory=lambda: list(BASELINES))
    """Baselines built from the examples: any of ``lead``, ``oracle``, ``lexrank``."""
    bootstrap: BootstrapConfig = field(default_factory=BootstrapConfig)

    def __post_init__(self) -> None:
        if isinstance(self.bootstrap, Mapping):
            self.bootstrap = BootstrapConfig(**self.bootstrap)
        unknown = [name for name in self.baselines if name not in BASELINES]
        if unknown:
            raise ValueError(f"baselines: unknown {unknown}, expected any of {list(BASELINES)}")


@dataclass
class ScoredSplit:
    """``systems``: figures per system (layout in the module docstring); ``rows``: one dict per
    (example, system) with the per-example figures; ``comparisons``: paired tests by
    ``"A vs B"``, each ``{metric: {"difference", "ci", "p_value"}}``."""

    systems: dict[str, dict[str, Any]]
    rows: list[dict[str, Any]]
    comparisons: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)


def example_source(example: Example) -> str:
    """The example's source text (title and every paragraph), for novel n-grams."""
    return " ".join([example.title, *(p for document in example.documents for p in document)]).strip()


def _score_system(
    outputs: Sequence[str], examples: Sequence[Example], references: list[list[str]]
) -> tuple[dict[str, Any], list[dict[str, float]], dict[str, Resamplable]]:
    """(figures without intervals, per-example rows, resamplable metrics by key)."""
    max_rows, mean_rows = rouge_max_and_mean(outputs, references)
    text_rows = [text_statistics(output, example_source(example), example.references)
                 for output, example in zip(outputs, examples, strict=True)]
    resamplable: dict[str, Resamplable] = {}
    for key in ROUGE_KEYS:
        resamplable[key] = mean_metric([row[key] for row in max_rows])
        resamplable[f"{MEAN_KEY}/{key}"] = mean_metric([row[key] for row in mean_rows])
    streams = reference_streams(references)
    figures: dict[str, Any] = {}
    for name, metric_class in SACREBLEU_METRICS.items():
        metric = metric_class()
        resamplable[name] = sacrebleu_metric(metric, outputs, streams)
        figures[f"{name}_signature"] = str(metric.get_signature())
    for key in TEXT_KEYS:
        resamplable[key] = mean_metric([row[key] for row in text_rows])
    for key, metric in resamplable.items():
        if not key.startswith(MEAN_KEY):
            figures[key] = metric.point
    figures[MEAN_KEY] = {key: resamplable[f"{MEAN_KEY}/{key}"].point for key in ROUGE_KEYS}
    figures["n_examples"] = len(outputs)
    rows = [
        {**max_row, **{f"mean_{key}": value for key, value in mean_row.items()}, **text_row}
        for max_row, mean_row, text_row in zip(max_rows, mean_rows, text_rows, strict=True)
    ]
    return figures, rows, resamplable


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"a": x, "mean_over_references/b": y}`` -> ``{"a": x, "mean_over_references": {"b": y}}``."""
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        if "/" in key:
            outer, inner = key.split("/", 1)
            nested.setdefault(outer, {})[inner] = value
        else:
            nested[key] = value
    return nested


def score_split(
    examples: Sequence[Example],
    systems: Mapping[str, Sequence[str]],
    config: ScoringConfig | None = None,
    *,
    compare: Sequence[tuple[str, str]] = (),
) -> ScoredSplit:
    """Score ``systems`` (name -> one output per example) and ``config.baselines`` on ``examples``.

    ``compare``: pairs (A, B) of system names to test with the paired bootstrap.
    """
    config = config or ScoringConfig()
    references = [list(example.references) for example in examples]
    outputs = dict(systems)
    for name in config.baselines:
        outputs.setdefault(name, baseline_summaries(name, examples))
    for name, texts in outputs.items():
        if len(texts) != len(examples):
            raise ValueError(f"system {name!r}: expected {len(examples)} outputs, one per example, found {len(texts)}")

    scored: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    resamplables: dict[str, dict[str, Resamplable]] = {}
    for name, texts in outputs.items():
        figures, system_rows, resamplables[name] = _score_system(texts, examples, references)
        scored[name] = figures
        rows += [{"id": example.id, "system": name, **row} for example, row in zip(examples, system_rows, strict=True)]

    comparisons: dict[str, dict[str, dict[str, Any]]] = {}
    samples = config.bootstrap.samples
    if samples:
        indices = bootstrap_indices(len(examples), samples, config.bootstrap.seed)
        for name, metrics in resamplables.items():
            scored[name]["ci"] = _nest({
                key: list(confidence_interval(metric, indices, config.bootstrap.level))
                for key, metric in metrics.items()
            })
        for first, second in compare:
            comparisons[f"{first} vs {second}"] = _nest({
                key: paired_bootstrap(resamplables[first][key], resamplables[second][key], indices,
                                      config.bootstrap.level)
                for key in resamplables[first]
            })
    return ScoredSplit(systems=scored, rows=rows, comparisons=comparisons)
