"""Tests of hiersum.evaluation.baselines: lead, greedy oracle, LexRank, and their outputs against those recorded
(tests/helpers/baseline_cases.py)."""

import json
from collections import Counter

import numpy as np
import pytest
from rouge_score import rouge_scorer

from hiersum.data.schema import Example
from hiersum.data.similarity import tfidf_cosine
from hiersum.evaluation.baselines import (
    BASELINES,
    LEXRANK_DAMPING,
    OracleCounts,
    baseline_summaries,
    lead,
    lead3,
    lexrank,
    lexrank_centrality,
    lexrank_order,
    oracle,
    pagerank,
    source_sentences,
)
from hiersum.private_apis import rouge_ngrams
from tests.helpers.baseline_cases import ADA, MULTINEWS, OUTPUTS, REAL_PREFIX, all_cases, outputs

EXAMPLE = ADA  # also a recorded case


def _objective(text: str, reference: str) -> float:
    scores = rouge_scorer.RougeScorer(["rouge1", "rouge2"], use_stemmer=True).score(reference, text)
    return (scores["rouge1"].fmeasure + scores["rouge2"].fmeasure) / 2


def test_source_sentences_in_order_without_title():
    assert source_sentences(EXAMPLE) == [
        "Ada Lovelace was born in London in 1815.", "She loved poetry.", "The weather was cold that winter.",
        "Ada Lovelace wrote the first computer program for the Analytical Engine.", "Many cite her.",
    ]


def test_lead_is_cut_to_the_first_reference_length():
    assert lead(EXAMPLE).split() == "Ada Lovelace was born in London in 1815. She loved poetry. The".split()


def test_lead3_is_the_first_three_sentences_across_paragraphs_and_documents_whatever_the_reference():
    assert lead3(EXAMPLE).splitlines() == source_sentences(EXAMPLE)[:3]
    long_reference = Example(id="y", title="", documents=EXAMPLE.documents, references=["word " * 200])
    assert lead3(long_reference) == lead3(EXAMPLE)
    two = Example(id="z", title="", documents=[["One here. Two there."]], references=["r"])
    assert lead3(two) == "One here.\nTwo there."


def test_oracle_picks_the_covering_sentences_in_source_order():
    summary = oracle(EXAMPLE)
    assert summary == ("Ada Lovelace was born in London in 1815. "
                       "Ada Lovelace wrote the first computer program for the Analytical Engine.")
    reference = EXAMPLE.references[0]
    # Greedy optimum: adding or swapping any single sentence does not raise rouge-score's objective.
    best = _objective(summary, reference)
    for sentence in source_sentences(EXAMPLE):
        if sentence not in summary:
            assert _objective(summary + " " + sentence, reference) <= best
    assert best > _objective(source_sentences(EXAMPLE)[0], reference)


def test_oracle_uses_the_best_reference_and_respects_max_sentences():
    example = Example(id="y", title="", documents=[["Cats purr. Dogs bark. Birds sing."]],
                      references=["Fish swim.", "Dogs bark loudly."])
    assert oracle(example) == "Dogs bark."
    assert oracle(EXAMPLE, max_sentences=1).count(".") == 1


def test_lexrank_prefers_the_central_sentence():
    sentences = ["the cat sat on the mat", "the cat and the mat", "a cat on a mat sat", "stocks fell on monday"]
    order = lexrank_order(sentences)
    assert order[-1] == 3  # the sentence that shares no word with the others is least central
    example = Example(id="z", title="", documents=[sentences], references=["one two three four five six"])
    summary = lexrank(example)
    assert len(summary.split()) == 6 and "stocks" not in summary


def test_baseline_summaries_checks_names_and_references():
    assert baseline_summaries("lead", [EXAMPLE]) == [lead(EXAMPLE)]
    with pytest.raises(ValueError, match="unknown baseline 'bogus'"):
        baseline_summaries("bogus", [EXAMPLE])
    with pytest.raises(ValueError, match="need a reference summary"):
        baseline_summaries("oracle", [Example(id="n", title="", documents=[["text."]])])


def test_lexrank_takes_sentences_of_equal_centrality_in_source_order():
    """Copies of a sentence (and one that differs only in punctuation or a repeated word: the same tf-idf direction)
    tie; float64 sums leave their centralities unequal in the last bits, the rounding makes them equal."""
    sentences = ["a the dog.", "bark cat sing and.", "a and.", "a at at on on.", "a the dog."]
    assert pagerank(tfidf_cosine(sentences))[0] != pagerank(tfidf_cosine(sentences))[4]  # by 6e-17
    centrality = lexrank_centrality(sentences)
    assert centrality[0] == centrality[4]
    order = lexrank_order(sentences)
    assert order.index(4) == order.index(0) + 1
    variants = lexrank_centrality(["a the dog.", "bark cat sing and.", "a the dog!", "a a the the dog dog."])
    assert variants[0] == variants[2] == variants[3] != variants[1]
    assert lexrank_order([]) == [] and lexrank_order(["alone."]) == [0]


def test_pagerank_is_the_stationary_distribution_of_the_teleporting_walk():
    """The power iteration's answer solves the linear system of PageRank (networkx's definition: rows normalized,
    a node without edges jumps uniformly, damping 0.85) to its tolerance."""
    rng = np.random.default_rng(0)
    weights = rng.random((30, 30)) * (rng.random((30, 30)) < 0.2)
    weights = weights + weights.T
    weights[[3, 17]] = weights[:, [3, 17]] = 0.0  # two isolated nodes (dangling)
    rank = pagerank(weights)
    n = len(weights)
    out = weights.sum(axis=1)
    transition = np.where(out[:, None] > 0, weights / np.where(out > 0, out, 1)[:, None], 1.0 / n)
    system = np.eye(n) - LEXRANK_DAMPING * transition.T
    expected = np.linalg.solve(system, np.full(n, (1 - LEXRANK_DAMPING) / n))
    assert abs(rank.sum() - 1) < 1e-9 and np.abs(rank - expected).sum() < n * 1e-6
    assert rank[3] == rank[17] == pytest.approx((1 - LEXRANK_DAMPING) / n + LEXRANK_DAMPING * rank[[3, 17]].sum() / n)


def test_the_oracle_scores_are_rouge_scores_of_the_summed_counts():
    """Each candidate's F1 (:class:`OracleCounts`) is rouge-score's ``_score_ngrams`` of the selection's summed
    n-gram counts plus the candidate's, to the bit, for ROUGE-1 and -2 and two references."""
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(12)]
    sentences = [list(rng.choice(words, size=rng.integers(0, 9))) for _ in range(25)]
    references = [list(rng.choice(words, size=size)) for size in (15, 4)]
    for n in (1, 2):
        sentence_grams = [rouge_ngrams(tokens, n) for tokens in sentences]
        reference_grams = [rouge_ngrams(tokens, n) for tokens in references]
        counts = OracleCounts(sentence_grams, reference_grams)
        selection = Counter()
        for chosen in (4, 11, 0):
            f1 = counts.f1_with_each()
            for r, reference in enumerate(reference_grams):
                expected = [rouge_scorer._score_ngrams(reference, selection + grams).fmeasure
                            for grams in sentence_grams]
                assert f1[r].tolist() == expected
            counts.add(chosen)
            selection += sentence_grams[chosen]


def _differences(cases: dict[str, Example]) -> list[str]:
    """What differs from the record: any summary, and LexRank's order beyond a different order among sentences of
    equal centrality."""
    recorded = json.loads(OUTPUTS.read_text(encoding="utf-8"))
    found = []
    for name, example in cases.items():
        now, then = outputs(example), recorded[name]
        centrality = lexrank_centrality(source_sentences(example))
        if centrality[then["lexrank_order"]].tolist() != centrality[now["lexrank_order"]].tolist():
            found.append(f"{name}: lexrank_order")
        found += [f"{name}: {key}" for key in BASELINES if now[key] != then[key]]
    return found


def test_the_baselines_give_the_recorded_outputs():
    """The recorded outputs (tests/helpers/baseline_cases.py) on its cases that need no data."""
    cases = {name: example for name, example in all_cases().items() if not name.startswith(REAL_PREFIX)}
    assert len(cases) == 47 and _differences(cases) == []


@pytest.mark.slow
def test_the_baselines_give_the_recorded_outputs_on_multinews():
    """The same on 30 Multi-News validation records and 4 clusters of 25 of their articles (464-1,052 sentences)."""
    if not MULTINEWS.is_file():
        pytest.skip(f"{MULTINEWS} is absent")
    cases = {name: example for name, example in all_cases().items() if name.startswith(REAL_PREFIX)}
    assert len(cases) == 34 and _differences(cases) == []
