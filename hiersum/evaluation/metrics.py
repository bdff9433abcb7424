"""Summary metrics: thin wrappers around ``rouge-score`` and ``sacrebleu``.

No metric is reimplemented here. This module only

* validates the inputs (one list of references per prediction, at least one each),
* prepares text for ROUGE-Lsum (one sentence a line, split by hiersum's one sentence splitter, NLTK's Punkt:
  :func:`hiersum.data.sentences.one_sentence_a_line`),
* aggregates several references per example (ROUGE: the best-matching reference,
  ``max``, and the mean over the references, ``mean``; BLEU and chrF: sacrebleu's native
  multi-reference corpus score),
* counts lengths, novel n-grams (absent from the source) and repeated n-grams of outputs,
  on rouge-score's tokenization (lowercased alphanumeric tokens, no stemming),
* puts everything on a 0-100 scale (ratios: 0-100 too).

References are always given per example as a list of strings, even when there is only
one: ``references[i]`` holds the references of ``predictions[i]``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from nltk.stem import porter
from rouge_score import rouge_scorer, scoring, tokenize, tokenizers
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.metrics.base import Metric

from hiersum.data.sentences import one_sentence_a_line
from hiersum.private_apis import rouge_ngrams

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
ROUGE_MEASURES = ("precision", "recall", "fmeasure")
"""rouge-score's fields; the F1 of ``rouge1`` is reported as ``rouge1``, the others as
``rouge1_precision`` and ``rouge1_recall``."""
NGRAM_ORDERS = (1, 2, 3)
"""n of the novel and repeated n-gram ratios."""

def _validate(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> None:
    """Check that there is one non-empty list of reference strings per prediction."""
    if isinstance(predictions, str):
        raise TypeError("predictions: expected a sequence of strings, found a single string")
    if len(predictions) != len(references):
        raise ValueError(
            f"expected one list of references per prediction, found {len(predictions)} "
            f"predictions and {len(references)} reference lists"
        )
    if len(predictions) == 0:
        raise ValueError("expected at least one prediction to score, found none")
    for i, (prediction, refs) in enumerate(zip(predictions, references, strict=True)):
        if not isinstance(prediction, str):
            raise TypeError(
                f"predictions[{i}]: expected a string, found {type(prediction).__name__}"
            )
        if isinstance(refs, str):
            raise TypeError(
                f"references[{i}]: expected a list of reference strings, found a single "
                "string (wrap it in a list: [reference])"
            )
        if len(refs) == 0:
            raise ValueError(f"references[{i}]: expected at least one reference, found none")
        for j, ref in enumerate(refs):
            if not isinstance(ref, str):
                raise TypeError(
                    f"references[{i}][{j}]: expected a string, found {type(ref).__name__}"
                )


def rouge_key(rouge_type: str, measure: str) -> str:
    """The metrics key of a ROUGE figure: ``rouge1`` for the F1, ``rouge1_recall`` ..."""
    return rouge_type if measure == "fmeasure" else f"{rouge_type}_{measure}"


ROUGE_KEYS = tuple(rouge_key(t, m) for t in ROUGE_TYPES for m in ("fmeasure", "precision", "recall"))


class _CachedStemmer:
    """rouge-score's Porter stemmer with a cache of its words: a corpus repeats a small vocabulary, and the
    stemmer (pure Python) was most of ROUGE's time. The same stems, so the same scores."""

    def __init__(self) -> None:
        self.stem = functools.lru_cache(maxsize=500_000)(porter.PorterStemmer().stem)


class _CachedTokenizer(tokenizers.Tokenizer):
    """rouge-score's own stemming tokenizer (``tokenize.tokenize`` with its Porter stemmer, each word's stem
    cached) with a cache of texts: a reference scored against several systems (and its sentences, for
    ROUGE-Lsum) is stemmed once. Same tokens, so the same scores."""

    def __init__(self) -> None:
        stemmer = _CachedStemmer()
        self._cached = functools.lru_cache(maxsize=200_000)(lambda text: tuple(tokenize.tokenize(text, stemmer)))

    def tokenize(self, text: str) -> list[str]:
        return list(self._cached(text))


@functools.cache
def rouge_tokenizer() -> tokenizers.Tokenizer:
    """The stemming tokenizer every ROUGE figure is computed with (:func:`rouge_scorer_instance`'s), built once."""
    return _CachedTokenizer()


@functools.cache
def rouge_scorer_instance() -> rouge_scorer.RougeScorer:
    """The one scorer every ROUGE figure comes from, built once: rouge-score's
    ``RougeScorer(ROUGE_TYPES, use_stemmer=True)`` with its tokenizer's results cached (:func:`rouge_tokenizer`)."""
    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), tokenizer=rouge_tokenizer())


def rouge_reference_scores(
    predictions: Sequence[str], references: Sequence[Sequence[str]]
) -> list[list[dict[str, scoring.Score]]]:
    """rouge-score's scores of every (prediction, reference) pair: ``[example][reference][rouge type]``.

    ``RougeScorer(ROUGE_TYPES, use_stemmer=True)``, texts one sentence a line
    (:func:`hiersum.data.sentences.one_sentence_a_line`).
    """
    _validate(predictions, references)
    scorer = rouge_scorer_instance()
    return [
        [scorer.score(target=one_sentence_a_line(ref), prediction=one_sentence_a_line(prediction))
         for ref in refs]
        for prediction, refs in zip(predictions, references, strict=True)
    ]


def rouge_max_and_mean(
    predictions: Sequence[str], references: Sequence[Sequence[str]]
) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    """Per example ROUGE precision, recall and F1 (0-100, keys :data:`ROUGE_KEYS`), two ways.

    ``max``: for each ROUGE type, the reference with the best F1; its precision and recall are
    reported with it (so different types of one example may come from different references).
    ``mean``: precision, recall and F1 each averaged over the example's references.
    Returns ``(max rows, mean rows)``, one dict per example.
    """
    max_rows, mean_rows = [], []
    for per_reference in rouge_reference_scores(predictions, references):
        best, mean = {}, {}
        for rouge_type in ROUGE_TYPES:
            scores = [ref_scores[rouge_type] for ref_scores in per_reference]
            top = max(scores, key=lambda score: score.fmeasure)
            for measure in ROUGE_MEASURES:
                key = rouge_key(rouge_type, measure)
                best[key] = 100.0 * getattr(top, measure)
                mean[key] = 100.0 * sum(getattr(score, measure) for score in scores) / len(scores)
        max_rows.append(best)
        mean_rows.append(mean)
    return max_rows, mean_rows


def rouge_per_example(
    predictions: Sequence[str], references: Sequence[Sequence[str]]
) -> list[dict[str, float]]:
    """ROUGE F1 (0-100) of each prediction: per metric, the best over its references.

    Scores come from ``rouge_score.rouge_scorer.RougeScorer(ROUGE_TYPES, use_stemmer=True)``.
    Texts are passed one sentence a line (:func:`hiersum.data.sentences.one_sentence_a_line`), which rouge-score uses
    for ROUGE-Lsum; ROUGE-1/2/L tokenize on non-alphanumerics, so newlines do not change
    them. The maximum is taken separately for each metric, so two metrics of one example
    may come from different references.
    """
    max_rows, _ = rouge_max_and_mean(predictions, references)
    return [{name: row[name] for name in ROUGE_TYPES} for row in max_rows]


def rouge_scores(
    predictions: Sequence[str], references: Sequence[Sequence[str]]
) -> dict[str, float]:
    """Corpus ROUGE F1 (0-100): the mean over examples of :func:`rouge_per_example`.

    Returns ``{"rouge1": ..., "rouge2": ..., "rougeL": ..., "rougeLsum": ...}``.
    """
    per_example = rouge_per_example(predictions, references)
    return {
        name: sum(scores[name] for scores in per_example) / len(per_example) for name in ROUGE_TYPES
    }


def reference_streams(references: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """References as sacrebleu's parallel streams (stream ``j``: the ``j``-th reference of every
    example); examples with fewer references than the most are padded with ``None``, which
    sacrebleu skips (its signature then reads ``nrefs:var``)."""
    n_streams = max(len(refs) for refs in references)
    return [[refs[j] if j < len(refs) else None for refs in references] for j in range(n_streams)]


SACREBLEU_METRICS = {"bleu": BLEU, "chrf": CHRF}
"""The corpus metrics taken from sacrebleu, with default settings (BLEU: 13a tokenization,
exponential smoothing; chrF: character 6-grams, beta 2)."""


def sacrebleu_metric_of(name: str, *, tokenized_text: bool = False) -> Metric:
    """sacrebleu's metric ``name`` (:data:`SACREBLEU_METRICS`) with its default settings. ``tokenized_text``: the
    outputs are the tokens of a corpus released tokenized (``data.text_normalization=ptb``, as CNN/DailyMail's
    release is), so BLEU's warning that outputs ending in a tokenized period look undetokenized is expected, and
    silenced (``force=True``, which changes no figure and no signature)."""
    if name == "bleu":
        return BLEU(force=tokenized_text)
    return SACREBLEU_METRICS[name]()


def sacrebleu_score(
    name: str, predictions: Sequence[str], references: Sequence[Sequence[str]]
) -> tuple[float, str]:
    """Corpus ``name`` (``bleu`` or ``chrf``, 0-100) with every reference, and sacrebleu's signature
    string (references padded as in :func:`reference_streams`)."""
    _validate(predictions, references)
    metric = sacrebleu_metric_of(name)
    result = metric.corpus_score(list(predictions), reference_streams(references))
    return result.score, str(metric.get_signature())


def tokens(text: str) -> list[str]:
    """rouge-score's tokens of ``text`` (lowercased alphanumeric runs, no stemming)."""
    return tokenize.tokenize(text, None)


def novel_ngram_ratio(summary: str | Sequence[str], source: str | Sequence[str], n: int) -> float:
    """Share (0-100) of the summary's n-grams (with repeats) that never occur in ``source``;
    0 for a summary shorter than n tokens. Each text as a string or as its :func:`tokens`."""
    summary_ngrams = rouge_ngrams(_tokens_of(summary), n)
    total = sum(summary_ngrams.values())
    if not total:
        return 0.0
    source_ngrams = rouge_ngrams(_tokens_of(source), n)
    return 100.0 * sum(count for gram, count in summary_ngrams.items() if gram not in source_ngrams) / total


def repeated_ngram_ratio(summary: str | Sequence[str], n: int) -> float:
    """Share (0-100) of the summary's n-grams that repeat an earlier n-gram of the summary
    (``(count - distinct) / count``); 0 for a summary shorter than n tokens. The summary as a string or as
    its :func:`tokens`."""
    summary_ngrams = rouge_ngrams(_tokens_of(summary), n)
    total = sum(summary_ngrams.values())
    return 100.0 * (total - len(summary_ngrams)) / total if total else 0.0


def _tokens_of(text: str | Sequence[str]) -> Sequence[str]:
    return tokens(text) if isinstance(text, str) else text


def text_statistics(summary: str, source: str, references: Sequence[str]) -> dict[str, float]:
    """Length and n-gram statistics of one output.

    ``length`` (whitespace words), ``reference_length`` (mean over the references),
    ``novel_{n}gram`` and ``repeated_{n}gram`` (0-100) for n in :data:`NGRAM_ORDERS`.
    """
    stats = {
        "length": float(len(summary.split())),
        "reference_length": sum(len(ref.split()) for ref in references) / max(len(references), 1),
    }
    summary_tokens, source_tokens = tokens(summary), tokens(source)  # each text tokenized once, not per n
    for n in NGRAM_ORDERS:
        stats[f"novel_{n}gram"] = novel_ngram_ratio(summary_tokens, source_tokens, n)
        stats[f"repeated_{n}gram"] = repeated_ngram_ratio(summary_tokens, n)
    return stats


def lead_baseline(paragraphs: Sequence[str], reference: str) -> str:
    """The LEAD baseline: the input's first words, as many as ``reference`` has.

    ``paragraphs`` (in input order) are joined with spaces and cut to the number of
    whitespace-separated words of ``reference``. Whitespace is normalised to single
    spaces. For several references, pass the one whose length should be matched.
    """
    if isinstance(paragraphs, str):
        raise TypeError("paragraphs: expected a sequence of strings, found a single string")
    n_words = len(reference.split())
    words = " ".join(paragraphs).split()
    return " ".join(words[:n_words])

