"""Bootstrap confidence intervals and the paired bootstrap test for corpus-level metrics.

A corpus metric is wrapped as a :class:`Resamplable`: its value on the real corpus and a function
that computes it on resampled corpora given as index rows. Two kinds exist:

* :func:`mean_metric`: the mean of per-example values (ROUGE, lengths, n-gram ratios);
* :func:`sacrebleu_metric`: a sacrebleu corpus metric (BLEU, chrF). The per-sentence sufficient
  statistics are extracted once with sacrebleu (:func:`hiersum.private_apis.sacrebleu_statistics`); a
  resampled corpus sums the statistics of its rows and sacrebleu turns the sum into a score
  (:func:`hiersum.private_apis.sacrebleu_score_of_sums`). This is what ``sacrebleu --confidence`` and
  ``--paired-bs`` do (``sacrebleu.significance``), with our own seeded indices instead of its
  environment-variable seed, so that every metric and every system of a report is resampled with
  the same rows.

:func:`bootstrap_indices` draws the rows once (seeded); :func:`confidence_interval` gives the
percentile interval (2.5 and 97.5 percentiles for 95%); :func:`paired_bootstrap` compares two
systems on the same examples: the observed difference, its interval, and a two-sided p-value
computed as in Koehn (2004) / Berg-Kirkpatrick et al. (2012) on the differences re-centred on
zero: ``p = (1 + #{|d_b - mean(d)| >= |d_observed|}) / (samples + 1)``. Identical systems give
p = 1; clearly different ones give p = 1 / (samples + 1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from sacrebleu.metrics.base import Metric

from hiersum.private_apis import sacrebleu_corpus_score, sacrebleu_score_of_sums, sacrebleu_statistics


@dataclass(frozen=True)
class Resamplable:
    """A corpus-level metric that can be recomputed on resampled corpora.

    ``point``: its value on the real corpus. ``resample(indices [R, N]) -> [R]``: its value on each
    resampled corpus, row ``r`` holding the example indices of resample ``r``.
    """

    point: float
    resample: Callable[[np.ndarray], np.ndarray]
    n_examples: int


def mean_metric(values: Sequence[float]) -> Resamplable:
    """The mean of per-example ``values``."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"expected a non-empty list of per-example values, found shape {array.shape}")

    def resample(indices: np.ndarray) -> np.ndarray:
        # a block of rows at a time: each row's mean as array[indices].mean(axis=1) gives it, without the
        # [samples, N] float copy (800 MB at 100,000 examples)
        return np.concatenate([array[indices[start : start + RESAMPLE_BLOCK]].mean(axis=1)
                               for start in range(0, len(indices), RESAMPLE_BLOCK)])

    return Resamplable(float(array.mean()), resample, array.size)


RESAMPLE_BLOCK = 64
"""Bootstrap rows resampled at a time by :func:`mean_metric`."""


def sacrebleu_metric(
    metric: Metric, predictions: Sequence[str], streams: Sequence[Sequence[str | None]]
) -> Resamplable:
    """A sacrebleu corpus metric (e.g. ``BLEU()``, ``CHRF()``) over ``predictions`` and reference
    ``streams`` (:func:`hiersum.evaluation.metrics.reference_streams`); ``point`` equals ``corpus_score``."""
    return sacrebleu_from_statistics(metric, sacrebleu_statistics(metric, predictions, streams))


def sacrebleu_from_statistics(metric: Metric, statistics: Sequence[Sequence[float]]) -> Resamplable:
    """:func:`sacrebleu_metric` from the per-sentence statistics of ``metric`` (one row per example, in corpus
    order, as :func:`hiersum.private_apis.sacrebleu_statistics` gives them: computed in parts, they are the same
    rows)."""
    point = sacrebleu_corpus_score(metric, statistics).score
    table = np.asarray(statistics, dtype=np.float64)  # (N, number of statistics)

    def resample(indices: np.ndarray) -> np.ndarray:
        # each row's statistics summed as how often it drew each example times that example's statistics:
        # integer counts, so the sums are exact (as table[row].sum(axis=0) gives them) and need no [N, C] copy
        return np.array([sacrebleu_score_of_sums(metric, np.bincount(row, minlength=len(table)) @ table).score
                         for row in indices])

    return Resamplable(float(point), resample, len(statistics))


def bootstrap_indices(n_examples: int, samples: int, seed: int) -> np.ndarray:
    """``samples`` resamples of ``n_examples`` indices drawn with replacement: [samples, n_examples]."""
    if n_examples < 1 or samples < 1:
        raise ValueError(f"bootstrap needs n_examples >= 1 and samples >= 1, found {n_examples}, {samples}")
    return np.random.default_rng(seed).integers(0, n_examples, size=(samples, n_examples))


def _check(metric: Resamplable, indices: np.ndarray) -> None:
    if indices.ndim != 2 or indices.shape[1] != metric.n_examples:
        raise ValueError(
            f"expected bootstrap indices of shape [samples, {metric.n_examples}], found {list(indices.shape)}"
        )


def confidence_interval(metric: Resamplable, indices: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of ``metric`` (e.g. 2.5 and 97.5 percentiles for ``level`` 0.95)."""
    _check(metric, indices)
    return percentile_interval(metric.resample(indices), level)


def percentile_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of a metric's resampled ``values`` [samples] (:func:`confidence_interval`)."""
    tail = 100.0 * (1.0 - level) / 2
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return float(low), float(high)


def paired_bootstrap(
    system: Resamplable, baseline: Resamplable, indices: np.ndarray, level: float = 0.95
) -> dict[str, float | list[float]]:
    """Paired bootstrap test of ``system`` against ``baseline`` scored on the same examples.

    Returns ``{"difference": system - baseline, "ci": [low, high] of the difference,
    "p_value": two-sided p-value of "no difference"}`` (see the module docstring).
    """
    _check(system, indices)
    _check(baseline, indices)
    return paired_test(system.point - baseline.point, system.resample(indices) - baseline.resample(indices), level)


def paired_test(observed: float, differences: np.ndarray, level: float = 0.95) -> dict[str, float | list[float]]:
    """:func:`paired_bootstrap` from the ``observed`` difference and the resampled ``differences`` [samples]."""
    centred = np.abs(differences - differences.mean())
    # A tiny tolerance so that float noise of identical systems is not read as a difference.
    extreme = int(np.sum(centred >= abs(observed) - 1e-9))
    tail = 100.0 * (1.0 - level) / 2
    low, high = np.percentile(differences, [tail, 100.0 - tail])
    return {
        "difference": float(observed),
        "ci": [float(low), float(high)],
        "p_value": (extreme + 1) / (len(differences) + 1),
    }
