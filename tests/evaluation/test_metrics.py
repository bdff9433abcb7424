"""Tests of hiersum.evaluation.metrics against direct rouge-score and sacrebleu calls."""

import functools

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from hiersum.data.sentences import one_sentence_a_line
from hiersum.evaluation.metrics import (
    ROUGE_KEYS,
    ROUGE_TYPES,
    lead_baseline,
    novel_ngram_ratio,
    repeated_ngram_ratio,
    rouge_key,
    rouge_max_and_mean,
    rouge_per_example,
    rouge_scores,
    sacrebleu_score,
    text_statistics,
)

PREDICTIONS = [
    "The cats were sitting on the mat. They looked happy!",
    "Stocks fell sharply on Monday as investors worried about rates.",
    "A new bridge opened in the city.",
]
REFERENCES = [
    "The cat sat on the mat. It was happy.",
    "Markets dropped on Monday because investors feared higher interest rates.",
    "The city opened a new bridge on Sunday.",
]
bleu_score = functools.partial(sacrebleu_score, "bleu")
chrf_score = functools.partial(sacrebleu_score, "chrf")


def test_rouge_single_reference_equals_direct_rouge_score():
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    direct = [
        scorer.score(one_sentence_a_line(ref), one_sentence_a_line(pred))
        for pred, ref in zip(PREDICTIONS, REFERENCES, strict=True)
    ]
    ours = rouge_scores(PREDICTIONS, [[ref] for ref in REFERENCES])
    assert set(ours) == set(ROUGE_TYPES)
    for name in ROUGE_TYPES:
        expected = 100 * sum(scores[name].fmeasure for scores in direct) / len(direct)
        assert ours[name] == pytest.approx(expected)
    # ROUGE-1/2/L do not depend on the sentence splitting: compare with raw texts too.
    for name in ("rouge1", "rouge2", "rougeL"):
        raw = [
            scorer.score(ref, pred)[name].fmeasure
            for pred, ref in zip(PREDICTIONS, REFERENCES, strict=True)
        ]
        assert ours[name] == pytest.approx(100 * sum(raw) / len(raw))
    assert 0 < ours["rouge2"] < ours["rouge1"] < 100


def test_rouge_multi_reference_takes_best_reference():
    prediction = "the storm closed the airport for two days"
    references = ["heavy snow fell in the north", prediction]
    per_example = rouge_per_example([prediction], [references])
    assert per_example == [dict.fromkeys(ROUGE_TYPES, 100.0)]
    # Order of references does not matter; the worse reference alone scores lower.
    reversed_order = rouge_scores([prediction], [references[::-1]])
    assert reversed_order == rouge_scores([prediction], [references])
    assert rouge_scores([prediction], [references[:1]])["rouge1"] < 100


def test_rouge_multi_reference_max_is_per_metric_and_mean_over_examples():
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    refs = [["a b c d e f", "f e d c b a x"], ["g h i"]]
    preds = ["a b c f e", "g h z"]
    expected = {}
    for name in ROUGE_TYPES:
        best = [
            max(scorer.score(r, p)[name].fmeasure for r in rs)
            for p, rs in zip(preds, refs, strict=True)
        ]
        expected[name] = 100 * sum(best) / 2
    ours = rouge_scores(preds, refs)
    assert ours == pytest.approx(expected)


def test_rouge_lsum_uses_sentence_splitting():
    prediction = "the cat sat on the mat. the dog ran in the park."
    reference = "the dog ran in the park. the cat sat on the mat."
    scores = rouge_scores([prediction], [[reference]])
    # Whole-text LCS covers only one of the two sentences; per-sentence union LCS covers both.
    assert scores["rougeL"] < 60
    assert scores["rougeLsum"] == pytest.approx(100.0)
    # Without one sentence a line, rouge-score's Lsum falls back to plain L.
    scorer = rouge_scorer.RougeScorer(["rougeL", "rougeLsum"], use_stemmer=True)
    unsplit = scorer.score(reference, prediction)
    assert unsplit["rougeLsum"].fmeasure == pytest.approx(unsplit["rougeL"].fmeasure)


def test_bleu_single_reference_equals_sacrebleu():
    score, signature = bleu_score(PREDICTIONS, [[ref] for ref in REFERENCES])
    assert score == pytest.approx(sacrebleu.corpus_bleu(PREDICTIONS, [REFERENCES]).score)
    assert "nrefs:1" in signature


def test_bleu_multi_reference_equals_sacrebleu():
    second = [
        "The cats sat on the mat and they looked happy.",
        "Stocks fell on Monday as investors worried.",
        "A bridge opened in the city on Sunday.",
    ]
    references = [[a, b] for a, b in zip(REFERENCES, second, strict=True)]
    score, signature = bleu_score(PREDICTIONS, references)
    assert score == pytest.approx(sacrebleu.corpus_bleu(PREDICTIONS, [REFERENCES, second]).score)
    assert score > bleu_score(PREDICTIONS, [[ref] for ref in REFERENCES])[0]
    assert "nrefs:2" in signature


def test_bleu_ragged_references_padded_for_sacrebleu():
    references = [[REFERENCES[0], "The cats sat on the mat."], [REFERENCES[1]], [REFERENCES[2]]]
    score, signature = bleu_score(PREDICTIONS, references)
    streams = [REFERENCES, ["The cats sat on the mat.", None, None]]
    assert score == pytest.approx(sacrebleu.corpus_bleu(PREDICTIONS, streams).score)
    assert "nrefs:var" in signature


def test_lead_baseline_cuts_to_reference_length_in_order():
    paragraphs = ["one two three", "four  five\nsix", "seven"]
    assert lead_baseline(paragraphs, "a b c d e") == "one two three four five"
    assert lead_baseline(paragraphs, "a b") == "one two"
    assert lead_baseline(paragraphs, " ".join("x" * 20)) == "one two three four five six seven"
    assert lead_baseline(paragraphs, "") == ""


@pytest.mark.parametrize(
    ("predictions", "references", "error", "message"),
    [
        (["a", "b"], [["a"]], ValueError, "found 2 predictions and 1 reference lists"),
        ([], [], ValueError, "at least one prediction"),
        (["a", "b"], [["a"], []], ValueError, r"references\[1\]: expected at least one reference"),
        (["a"], ["a"], TypeError, r"references\[0\]: expected a list .* found a single string"),
        (["a"], [["a", 3]], TypeError, r"references\[0\]\[1\]: expected a string, found int"),
        ([None], [["a"]], TypeError, r"predictions\[0\]: expected a string, found NoneType"),
        ("abc", [["a"]] * 3, TypeError, "found a single string"),
    ],
)
def test_input_validation(predictions, references, error, message):
    for fn in (rouge_scores, bleu_score, chrf_score):
        with pytest.raises(error, match=message):
            fn(predictions, references)


def test_rouge_max_and_mean_hand_computed_two_references():
    # rouge1 vs "red fox": P = R = F = 1; vs "red dog": 1 of 2 unigrams match, P = R = F = 0.5.
    # rouge2 vs "red fox": 1; vs "red dog": 0.
    max_rows, mean_rows = rouge_max_and_mean(["red fox"], [["red fox", "red dog"]])
    assert max_rows[0]["rouge1"] == pytest.approx(100.0)
    assert max_rows[0]["rouge1_precision"] == pytest.approx(100.0)
    assert mean_rows[0]["rouge1"] == pytest.approx(75.0)
    assert mean_rows[0]["rouge1_recall"] == pytest.approx(75.0)
    assert max_rows[0]["rouge2"] == pytest.approx(100.0)
    assert mean_rows[0]["rouge2"] == pytest.approx(50.0)
    assert set(max_rows[0]) == set(ROUGE_KEYS) == set(mean_rows[0])


def test_rouge_precision_recall_and_mean_equal_direct_rouge_score():
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    second = ["A cat was on a mat, happily.", "Investors sold stocks.", "The bridge is new."]
    references = [[a, b] for a, b in zip(REFERENCES, second, strict=True)]
    max_rows, mean_rows = rouge_max_and_mean(PREDICTIONS, references)
    for pred, refs, best, mean in zip(PREDICTIONS, references, max_rows, mean_rows, strict=True):
        direct = [scorer.score(one_sentence_a_line(r), one_sentence_a_line(pred)) for r in refs]
        for name in ROUGE_TYPES:
            top = max((d[name] for d in direct), key=lambda s: s.fmeasure)
            assert best[name] == pytest.approx(100 * top.fmeasure)
            assert best[f"{name}_precision"] == pytest.approx(100 * top.precision)
            assert best[f"{name}_recall"] == pytest.approx(100 * top.recall)
            for measure in ("precision", "recall", "fmeasure"):
                expected = 100 * sum(getattr(d[name], measure) for d in direct) / len(direct)
                assert mean[rouge_key(name, measure)] == pytest.approx(expected)
        assert mean["rouge1"] <= best["rouge1"]


def test_chrf_equals_sacrebleu_with_all_references():
    second = ["The cats sat on the mat.", "Stocks fell.", "A bridge opened."]
    score, signature = chrf_score(PREDICTIONS, [[a, b] for a, b in zip(REFERENCES, second, strict=True)])
    assert score == pytest.approx(sacrebleu.corpus_chrf(PREDICTIONS, [REFERENCES, second]).score)
    assert "nrefs:2" in signature and "nc:6" in signature


def test_novel_and_repeated_ngram_ratios():
    source = "the cat sat on the mat"
    assert novel_ngram_ratio("the cat sat", source, 1) == 0.0
    # "the dog": unigram "dog" new (1 of 2); bigram "the dog" new (1 of 1).
    assert novel_ngram_ratio("the dog", source, 1) == pytest.approx(50.0)
    assert novel_ngram_ratio("the dog", source, 2) == pytest.approx(100.0)
    assert novel_ngram_ratio("cat", source, 2) == 0.0
    # "a b a b": unigrams 4, distinct 2 -> 50 %; bigrams a-b, b-a, a-b -> 1 of 3 repeated.
    assert repeated_ngram_ratio("a b a b", 1) == pytest.approx(50.0)
    assert repeated_ngram_ratio("a b a b", 2) == pytest.approx(100 / 3)
    assert repeated_ngram_ratio("a b c", 1) == 0.0
    stats = text_statistics("the dog", source, ["one two three", "one"])
    assert stats["length"] == 2 and stats["reference_length"] == 2
    assert stats["novel_2gram"] == pytest.approx(100.0)
