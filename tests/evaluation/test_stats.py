"""Tests of hiersum.evaluation.stats: bootstrap intervals and the paired bootstrap test."""

import numpy as np
import pytest
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF

from hiersum.evaluation.metrics import reference_streams
from hiersum.evaluation.stats import (
    bootstrap_indices,
    confidence_interval,
    mean_metric,
    paired_bootstrap,
    sacrebleu_metric,
)

HYPOTHESES = [
    "the cat sat on the mat",
    "a storm closed the airport for two days",
    "stocks fell sharply on monday",
    "the new bridge opened in the city",
    "researchers found a new species of frog",
    "the team won the final match",
]
REFERENCES = [
    ["the cat was sitting on the mat", "a cat sat on a mat"],
    ["the airport was closed for two days by a storm"],
    ["markets dropped on monday", "stocks fell on monday"],
    ["a bridge opened in the city on sunday"],
    ["a new frog species was discovered by researchers"],
    ["the team won the championship final"],
]


def test_bootstrap_indices_are_seeded_and_shaped():
    first = bootstrap_indices(7, 50, seed=3)
    assert first.shape == (50, 7) and first.min() >= 0 and first.max() < 7
    assert np.array_equal(first, bootstrap_indices(7, 50, seed=3))
    assert not np.array_equal(first, bootstrap_indices(7, 50, seed=4))
    with pytest.raises(ValueError, match="n_examples >= 1"):
        bootstrap_indices(0, 10, seed=0)


def test_mean_metric_resamples_the_mean():
    metric = mean_metric([1.0, 2.0, 6.0])
    assert metric.point == pytest.approx(3.0)
    rows = np.array([[0, 1, 2], [2, 2, 2], [0, 0, 1]])
    assert metric.resample(rows) == pytest.approx([3.0, 6.0, 4 / 3])


@pytest.mark.parametrize("metric_class, direct", [(BLEU, sacrebleu.corpus_bleu), (CHRF, sacrebleu.corpus_chrf)])
def test_sacrebleu_metric_equals_corpus_score_on_the_corpus_and_on_a_resample(metric_class, direct):
    streams = reference_streams(REFERENCES)
    metric = sacrebleu_metric(metric_class(), HYPOTHESES, streams)
    assert metric.point == pytest.approx(direct(HYPOTHESES, streams).score)
    identity = np.arange(len(HYPOTHESES))[None, :]
    assert metric.resample(identity)[0] == pytest.approx(metric.point)
    # A resampled corpus scores as sacrebleu scores those examples (repeats included).
    rows = np.array([[0, 0, 1, 3, 3, 5]])
    expected = direct([HYPOTHESES[i] for i in rows[0]], [[s[i] for i in rows[0]] for s in streams]).score
    assert metric.resample(rows)[0] == pytest.approx(expected)


def test_interval_contains_the_point_and_narrows_with_more_examples():
    rng = np.random.default_rng(0)
    small = mean_metric(rng.normal(30.0, 10.0, size=30))
    large = mean_metric(rng.normal(30.0, 10.0, size=1200))
    small_low, small_high = confidence_interval(small, bootstrap_indices(30, 1000, seed=1))
    large_low, large_high = confidence_interval(large, bootstrap_indices(1200, 1000, seed=1))
    assert small_low < small.point < small_high
    assert large_low < large.point < large_high
    assert large_high - large_low < (small_high - small_low) / 3

    bleu = sacrebleu_metric(BLEU(), HYPOTHESES, reference_streams(REFERENCES))
    low, high = confidence_interval(bleu, bootstrap_indices(len(HYPOTHESES), 300, seed=1))
    assert low <= bleu.point <= high and low < high


def test_paired_bootstrap_identical_systems_p_is_one():
    values = np.random.default_rng(1).uniform(0, 100, size=200)
    result = paired_bootstrap(mean_metric(values), mean_metric(values.copy()), bootstrap_indices(200, 500, seed=2))
    assert result["difference"] == 0.0
    assert result["p_value"] == pytest.approx(1.0)
    assert result["ci"] == [0.0, 0.0]


def test_paired_bootstrap_clearly_different_systems_p_near_zero():
    rng = np.random.default_rng(2)
    base = rng.uniform(20, 40, size=200)
    better = base + rng.normal(5.0, 2.0, size=200)
    result = paired_bootstrap(mean_metric(better), mean_metric(base), bootstrap_indices(200, 1000, seed=3))
    assert result["difference"] == pytest.approx(float(np.mean(better - base)))
    assert result["p_value"] < 0.01
    assert result["ci"][0] > 0

    # Same BLEU system against itself through sacrebleu statistics.
    streams = reference_streams(REFERENCES)
    bleu = sacrebleu_metric(BLEU(), HYPOTHESES, streams)
    same = paired_bootstrap(bleu, sacrebleu_metric(BLEU(), HYPOTHESES, streams),
                            bootstrap_indices(len(HYPOTHESES), 200, seed=0))
    assert same["p_value"] == pytest.approx(1.0)


def test_paired_bootstrap_noise_only_gives_a_large_p():
    rng = np.random.default_rng(5)
    a = rng.uniform(0, 100, size=300)
    b = a + rng.normal(0.0, 10.0, size=300)
    b += np.mean(a) - np.mean(b) + 0.1  # a difference far below the noise (standard error ~0.6)
    result = paired_bootstrap(mean_metric(a), mean_metric(b), bootstrap_indices(300, 1000, seed=6))
    assert result["p_value"] > 0.5


def test_mismatched_indices_are_refused():
    with pytest.raises(ValueError, match=r"shape \[samples, 3\]"):
        confidence_interval(mean_metric([1.0, 2.0, 3.0]), bootstrap_indices(4, 10, seed=0))


@pytest.mark.parametrize("metric_class", [BLEU, CHRF])
def test_sacrebleu_resample_equals_summing_the_drawn_rows(metric_class):
    """The resample sums each row's statistics through draw counts; the sums (of integer statistics) and so the
    scores are exactly those of summing the drawn examples' rows."""
    streams = reference_streams(REFERENCES)
    metric = metric_class()
    resamplable = sacrebleu_metric(metric, HYPOTHESES, streams)
    table = np.asarray(metric._extract_corpus_statistics(HYPOTHESES, streams), dtype=np.float64)
    indices = bootstrap_indices(len(HYPOTHESES), 50, seed=5)
    expected = [metric._compute_score_from_stats(table[row].sum(axis=0)).score for row in indices]
    assert resamplable.resample(indices).tolist() == expected


def test_mean_resample_in_blocks_equals_one_gather():
    """Means are resampled a block of rows at a time: bit for bit the means of the whole gather."""
    values = np.random.default_rng(0).random(1000)
    indices = bootstrap_indices(1000, 3 * 64 + 5, seed=9)  # several blocks and a short last one
    assert np.array_equal(mean_metric(values).resample(indices), values[indices].mean(axis=1))
