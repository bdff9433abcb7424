"""Tests of hiersum.evaluation.baselines: lead, greedy oracle, LexRank."""

import pytest
from rouge_score import rouge_scorer

from hiersum.data.schema import Example
from hiersum.evaluation.baselines import (
    baseline_summaries,
    lead,
    lead3,
    lexrank,
    lexrank_order,
    oracle,
    source_sentences,
)

EXAMPLE = Example(
    id="x",
    title="Ada",
    documents=[
        ["Ada Lovelace was born in London in 1815. She loved poetry.", "The weather was cold that winter."],
        ["Ada Lovelace wrote the first computer program for the Analytical Engine. Many cite her."],
    ],
    references=["Ada Lovelace, born in London in 1815, wrote the first computer program."],
)


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
