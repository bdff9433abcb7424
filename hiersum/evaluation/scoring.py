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

import contextlib
import multiprocessing
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from hiersum.config import BootstrapConfig, DataConfig, TextNormalization
from hiersum.data.schema import Example
from hiersum.evaluation.baselines import BASELINES, baseline_summaries
from hiersum.evaluation.metrics import (
    NGRAM_ORDERS,
    ROUGE_KEYS,
    SACREBLEU_METRICS,
    reference_streams,
    rouge_max_and_mean,
    sacrebleu_metric_of,
    text_statistics,
)
from hiersum.evaluation.stats import (
    Resamplable,
    bootstrap_indices,
    mean_metric,
    paired_test,
    percentile_interval,
    sacrebleu_from_statistics,
)
from hiersum.private_apis import sacrebleu_statistics

TEXT_KEYS = ("length", "reference_length", *(f"{kind}_{n}gram" for kind in ("novel", "repeated")
                                               for n in NGRAM_ORDERS))
MEAN_KEY = "mean_over_references"


@dataclass
class ScoringConfig:
    """What is scored beside the systems."""

    baselines: list[str] = field(default_factory=lambda: list(BASELINES))
    """Baselines built from the examples: any of ``lead``, ``oracle``, ``lexrank``."""
    bootstrap: BootstrapConfig = field(default_factory=BootstrapConfig)
    workers: int = 1
    """Processes that compute the per-example figures (ROUGE, BLEU and chrF statistics, text statistics) and the
    baselines, each a part of the examples; the figures and intervals are the same for any number."""
    tokenized_text: bool = False
    """The texts are the tokens of a corpus released tokenized (``data.text_normalization=ptb``): sacrebleu's
    warning about outputs that end in a tokenized period is expected and silenced
    (:func:`hiersum.evaluation.metrics.sacrebleu_metric_of`); BLEU and chrF are then of tokenized text, not
    comparable with figures over detokenized text."""

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, found {self.workers}")
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


def with_corpus_text(scoring: ScoringConfig, data: DataConfig) -> ScoringConfig:
    """``scoring`` with :attr:`ScoringConfig.tokenized_text` as ``data`` reads its corpus: True where the corpus's text
    is PTB tokens (``data.text_normalization=ptb``)."""
    return replace(scoring, tokenized_text=TextNormalization(data.text_normalization) is TextNormalization.ptb)


def example_source(example: Example) -> str:
    """The example's source text (title and every paragraph), for novel n-grams."""
    return " ".join([example.title, *(p for document in example.documents for p in document)]).strip()


@dataclass
class _PerExample:
    """The per-example figures of one system, in example order: what :func:`_per_example` computes, for a
    whole split or for a part of it (the parts of one split, joined in order, are the figures of the whole)."""

    max_rows: list[dict[str, float]]
    mean_rows: list[dict[str, float]]
    text_rows: list[dict[str, float]]
    sacrebleu: dict[str, list[Any]]
    """sacrebleu's sufficient statistics of each example, by metric (``bleu``, ``chrf``)."""

    @classmethod
    def joined(cls, parts: Sequence[_PerExample]) -> _PerExample:
        return cls([row for part in parts for row in part.max_rows], [row for part in parts for row in part.mean_rows],
                   [row for part in parts for row in part.text_rows],
                   {name: [row for part in parts for row in part.sacrebleu[name]] for name in SACREBLEU_METRICS})


def _per_example(part: tuple[Sequence[str], Sequence[str], list[list[str]], bool]) -> _PerExample:
    """ROUGE, text statistics and sacrebleu statistics of each (output, source, references) of ``part`` (and whether
    the texts are tokenized: :attr:`ScoringConfig.tokenized_text`); each example's figures depend on that example
    alone."""
    outputs, sources, references, tokenized_text = part
    max_rows, mean_rows = rouge_max_and_mean(outputs, references)
    text_rows = [text_statistics(output, source, refs) for output, source, refs in zip(outputs, sources, references,
                                                                                       strict=True)]
    streams = reference_streams(references)
    statistics = {name: sacrebleu_statistics(sacrebleu_metric_of(name, tokenized_text=tokenized_text), outputs, streams)
                  for name in SACREBLEU_METRICS}
    return _PerExample(max_rows, mean_rows, text_rows, statistics)


def _score_system(figures_of: _PerExample, references: list[list[str]]
                  ) -> tuple[dict[str, Any], list[dict[str, float]], dict[str, Resamplable]]:
    """(figures without intervals, per-example rows, resamplable metrics by key)."""
    max_rows, mean_rows, text_rows = figures_of.max_rows, figures_of.mean_rows, figures_of.text_rows
    resamplable: dict[str, Resamplable] = {}
    for key in ROUGE_KEYS:
        resamplable[key] = mean_metric([row[key] for row in max_rows])
        resamplable[f"{MEAN_KEY}/{key}"] = mean_metric([row[key] for row in mean_rows])
    figures: dict[str, Any] = {}
    counts = {len(refs) for refs in references}
    num_refs = next(iter(counts)) if len(counts) == 1 else -1  # what corpus_score sets: the signature's nrefs
    for name, metric_class in SACREBLEU_METRICS.items():
        metric = metric_class()
        metric.num_refs = num_refs
        resamplable[name] = sacrebleu_from_statistics(metric, figures_of.sacrebleu[name])
        figures[f"{name}_signature"] = str(metric.get_signature())
    for key in TEXT_KEYS:
        resamplable[key] = mean_metric([row[key] for row in text_rows])
    for key, metric in resamplable.items():
        if not key.startswith(MEAN_KEY):
            figures[key] = metric.point
    figures[MEAN_KEY] = {key: resamplable[f"{MEAN_KEY}/{key}"].point for key in ROUGE_KEYS}
    figures["n_examples"] = len(max_rows)
    rows = [
        {**max_row, **{f"mean_{key}": value for key, value in mean_row.items()}, **text_row}
        for max_row, mean_row, text_row in zip(max_rows, mean_rows, text_rows, strict=True)
    ]
    return figures, rows, resamplable


def _parts(count: int, workers: int) -> list[slice]:
    """``count`` examples cut into the slices the ``workers`` processes take (4 a worker, for balance)."""
    size = max(1, -(-count // (4 * workers)))
    return [slice(start, start + size) for start in range(0, count, size)]


@contextlib.contextmanager
def _mapper(workers: int) -> Iterator[Callable[[Callable[[Any], Any], list[Any]], list[Any]]]:
    """A ``map(function, parts) -> list`` in order: in this process (``workers=1``), or in a pool of ``workers``
    spawned processes that serves the whole split."""
    if workers == 1:
        yield lambda function, parts: [function(part) for part in parts]
        return
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield lambda function, parts: list(pool.map(function, parts))


def _baseline_part(part: tuple[str, Sequence[Example]]) -> list[str]:
    name, examples = part
    return baseline_summaries(name, examples)


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
    sources = [example_source(example) for example in examples]
    parts = _parts(len(examples), config.workers)
    outputs = dict(systems)
    for name, texts in outputs.items():
        if len(texts) != len(examples):
            raise ValueError(f"system {name!r}: expected {len(examples)} outputs, one per example, found {len(texts)}")
    per_example: dict[str, _PerExample] = {}
    with _mapper(config.workers) as in_parts:
        for name in config.baselines:
            if name not in outputs:
                summaries = in_parts(_baseline_part, [(name, examples[part]) for part in parts])
                outputs[name] = [summary for part in summaries for summary in part]
        for name, texts in outputs.items():
            per_example[name] = _PerExample.joined(
                in_parts(_per_example, [(texts[part], sources[part], references[part], config.tokenized_text)
                                       for part in parts]))

    scored: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    resamplables: dict[str, dict[str, Resamplable]] = {}
    for name in outputs:
        figures, system_rows, resamplables[name] = _score_system(per_example[name], references)
        scored[name] = figures
        rows += [{"id": example.id, "system": name, **row} for example, row in zip(examples, system_rows, strict=True)]

    comparisons: dict[str, dict[str, dict[str, Any]]] = {}
    samples = config.bootstrap.samples
    if samples:
        indices = bootstrap_indices(len(examples), samples, config.bootstrap.seed)
        # each metric resampled once: its intervals and its paired tests read the same values
        resampled = {name: {key: metric.resample(indices) for key, metric in metrics.items()}
                     for name, metrics in resamplables.items()}
        del indices
        for name, values in resampled.items():
            scored[name]["ci"] = _nest({key: list(percentile_interval(value, config.bootstrap.level))
                                        for key, value in values.items()})
        for first, second in compare:
            comparisons[f"{first} vs {second}"] = _nest({
                key: paired_test(resamplables[first][key].point - resamplables[second][key].point,
                                 resampled[first][key] - resampled[second][key], config.bootstrap.level)
                for key in resamplables[first]
            })
    return ScoredSplit(systems=scored, rows=rows, comparisons=comparisons)
