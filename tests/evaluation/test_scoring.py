"""Tests of hiersum.evaluation.scoring: every figure of a system agrees with its library, rows and tests."""

import logging

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from hiersum.config import DataConfig, TextNormalization
from hiersum.data.schema import Example
from hiersum.data.sentences import one_sentence_a_line
from hiersum.evaluation.baselines import lead
from hiersum.evaluation.metrics import ROUGE_KEYS, ROUGE_TYPES
from hiersum.evaluation.scoring import BootstrapConfig, ScoringConfig, score_split, with_corpus_text

EXAMPLES = [
    Example(id=f"e{i}", title="", documents=[[f"Sentence one about topic {i}. The cat sat on the mat {i} times.",
                                              "Another paragraph mentions storms and airports."]],
            references=[f"The cat sat on the mat {i} times.", "A cat on a mat."][: 1 + i % 2])
    for i in range(8)
]
OUTPUTS = [f"the cat sat {i} times on a mat" for i in range(8)]


def test_figures_equal_direct_library_calls():
    scored = score_split(EXAMPLES, {"model": OUTPUTS}, ScoringConfig(bootstrap=BootstrapConfig(samples=200)))
    assert set(scored.systems) == {"model", "lead", "lead3", "oracle", "lexrank"}
    model = scored.systems["model"]
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    for name in ROUGE_TYPES:
        best = [max(scorer.score(one_sentence_a_line(r), one_sentence_a_line(o))[name].fmeasure
                    for r in e.references) for o, e in zip(OUTPUTS, EXAMPLES, strict=True)]
        assert model[name] == pytest.approx(100 * sum(best) / len(best))
    streams = [[e.references[0] for e in EXAMPLES], [e.references[1] if len(e.references) > 1 else None
                                                      for e in EXAMPLES]]
    assert model["bleu"] == pytest.approx(sacrebleu.corpus_bleu(OUTPUTS, streams).score)
    assert model["chrf"] == pytest.approx(sacrebleu.corpus_chrf(OUTPUTS, streams).score)
    assert "nrefs:var" in model["bleu_signature"] and "nc:6" in model["chrf_signature"]
    assert set(model["mean_over_references"]) == set(ROUGE_KEYS)
    assert model["mean_over_references"]["rouge1"] <= model["rouge1"]
    for key in ("rouge1", "bleu", "chrf", "length"):
        low, high = model["ci"][key]
        assert low <= model[key] <= high
    assert model["n_examples"] == 8
    leads = [lead(e) for e in EXAMPLES]
    assert scored.systems["lead"]["bleu"] == pytest.approx(sacrebleu.corpus_bleu(leads, streams).score)


def test_rows_average_to_the_corpus_figures():
    scored = score_split(EXAMPLES, {"model": OUTPUTS}, ScoringConfig(baselines=["lead"]))
    rows = [row for row in scored.rows if row["system"] == "model"]
    assert [row["id"] for row in rows] == [e.id for e in EXAMPLES]
    for key in ("rouge2", "rougeL_recall", "length", "novel_2gram"):
        assert scored.systems["model"][key] == pytest.approx(sum(row[key] for row in rows) / len(rows))
    assert scored.systems["model"]["mean_over_references"]["rouge1"] == pytest.approx(
        sum(row["mean_rouge1"] for row in rows) / len(rows))
    assert {row["system"] for row in scored.rows} == {"model", "lead"}


def test_compare_and_no_bootstrap():
    scored = score_split(EXAMPLES, {"model": OUTPUTS, "copy": list(OUTPUTS)}, ScoringConfig(baselines=[]),
                         compare=[("model", "copy")])
    test = scored.comparisons["model vs copy"]
    assert test["rouge1"]["p_value"] == pytest.approx(1.0) and test["bleu"]["difference"] == 0.0
    assert test["mean_over_references"]["rouge2"]["p_value"] == pytest.approx(1.0)
    off = score_split(EXAMPLES, {"model": OUTPUTS}, ScoringConfig(baselines=[], bootstrap=BootstrapConfig(samples=0)))
    assert "ci" not in off.systems["model"]
    with pytest.raises(ValueError, match="expected 8 outputs"):
        score_split(EXAMPLES, {"model": OUTPUTS[:3]}, ScoringConfig(baselines=[]))
    with pytest.raises(ValueError, match="unknown"):
        ScoringConfig(baselines=["textrank"])


@pytest.mark.slow  # spawned scoring processes
def test_the_figures_and_intervals_are_the_same_for_any_number_of_workers():
    examples = [Example(id=f"m{i}", title=f"topic {i % 7}",
                        documents=[[f"Storms {i} hit the airport. Flights were cancelled {i % 5} times.",
                                    f"The mayor spoke about road {i % 3}. Schools closed early."]],
                        references=[f"Storm {i} cancelled flights.", f"Flights cancelled {i % 5} times.",
                                    "Schools closed."][: 1 + i % 3])
                for i in range(61)]  # parts of uneven size, references of 1 to 3 (sacrebleu's nrefs:var)
    outputs = {"model": [f"storms {i} cancelled flights {i % 4} times" for i in range(61)]}
    scoring = {"bootstrap": BootstrapConfig(samples=50), "baselines": ["lead", "lexrank"]}
    one = score_split(examples, outputs, ScoringConfig(**scoring, workers=1), compare=[("model", "lead")])
    three = score_split(examples, outputs, ScoringConfig(**scoring, workers=3), compare=[("model", "lead")])
    assert three.systems == one.systems and three.rows == one.rows and three.comparisons == one.comparisons
    assert "nrefs:var" in one.systems["model"]["bleu_signature"]
    streams = [[e.references[j] if j < len(e.references) else None for e in examples] for j in range(3)]
    assert one.systems["model"]["bleu"] == sacrebleu.corpus_bleu(outputs["model"], streams).score


def test_workers_must_be_at_least_one():
    with pytest.raises(ValueError, match="workers must be >= 1, found 0"):
        ScoringConfig(workers=0)


def test_tokenized_outputs_are_expected_only_of_a_tokenized_corpus(caplog):
    """400 outputs ending in a tokenized period (at least 100 in each of the 4 parts scored apart): sacrebleu warns
    that they look undetokenized unless the corpus is PTB tokens (``data.text_normalization=ptb``:
    ``with_corpus_text``), where they are what the model was trained to write; BLEU and its signature are the same
    either way."""
    examples = [Example(id=f"e{i}", title="", documents=[["a line ."]], references=[f"the cat sat {i} times ."])
                for i in range(400)]
    outputs = [f"the cat sat on {i} mats ." for i in range(400)]
    figures, warned = {}, {}
    for normalization in TextNormalization:
        scoring = with_corpus_text(ScoringConfig(baselines=[], bootstrap=BootstrapConfig(samples=0)),
                                   DataConfig(text_normalization=normalization))
        assert scoring.tokenized_text is (normalization is TextNormalization.ptb)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="sacrebleu"):
            figures[normalization] = score_split(examples, {"model": outputs}, scoring).systems["model"]
        warned[normalization] = any("tokenized period" in record.getMessage() for record in caplog.records)
    assert warned == {TextNormalization.none: True, TextNormalization.ptb: False}
    expected = sacrebleu.corpus_bleu(outputs, [[example.references[0] for example in examples]]).score
    for model in figures.values():
        assert model["bleu"] == pytest.approx(expected)
    assert figures[TextNormalization.none]["bleu_signature"] == figures[TextNormalization.ptb]["bleu_signature"]
