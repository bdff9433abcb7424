"""Summary metrics: thin wrappers around ``rouge-score`` and ``sacrebleu``.

No metric is reimplemented here. This module only

* validates the inputs (one list of references per prediction, at least one each),
* prepares text for ROUGE-Lsum (one sentence a line, see :func:`split_sentences`),
* aggregates several references per example (ROUGE: best F1 over the references of an
  example; BLEU: sacrebleu's native multi-reference corpus score),
* puts everything on a 0-100 scale.

References are always given per example as a list of strings, even when there is only
one: ``references[i]`` holds the references of ``predictions[i]``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences with a simple rule (no NLTK data needed offline).

    A sentence ends after ``.``, ``!`` or ``?`` followed by whitespace, and at every
    existing newline. Surrounding whitespace is stripped and empty pieces are dropped,
    so ``"A b. C d!\\nE"`` gives ``["A b.", "C d!", "E"]``. Abbreviations such as
    "e.g. this" are split too; that only affects ROUGE-Lsum, and it affects predictions
    and references alike.
    """
    sentences = []
    for line in text.splitlines():
        sentences.extend(piece for piece in _SENTENCE_END.split(line.strip()) if piece)
    return sentences


def _lsum_text(text: str) -> str:
    """``text`` with one sentence a line: the form rouge-score expects for ROUGE-Lsum."""
    return "\n".join(split_sentences(text))


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


def rouge_per_example(
    predictions: Sequence[str], references: Sequence[Sequence[str]]
) -> list[dict[str, float]]:
    """ROUGE F1 (0-100) of each prediction: per metric, the best over its references.

    Scores come from ``rouge_score.rouge_scorer.RougeScorer(ROUGE_TYPES, use_stemmer=True)``.
    Texts are passed one sentence a line (:func:`split_sentences`), which rouge-score uses
    for ROUGE-Lsum; ROUGE-1/2/L tokenize on non-alphanumerics, so newlines do not change
    them. The maximum is taken separately for each metric, so two metrics of one example
    may come from different references.
    """
    _validate(predictions, references)
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    per_example = []
    for prediction, refs in zip(predictions, references, strict=True):
        prediction = _lsum_text(prediction)
        best = dict.fromkeys(ROUGE_TYPES, 0.0)
        for ref in refs:
            scores = scorer.score(target=_lsum_text(ref), prediction=prediction)
            for name in ROUGE_TYPES:
                best[name] = max(best[name], 100.0 * scores[name].fmeasure)
        per_example.append(best)
    return per_example


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


def bleu_score(
    predictions: Sequence[str], references: Sequence[Sequence[str]]
) -> tuple[float, str]:
    """Corpus BLEU (0-100) with every reference, and sacrebleu's signature string.

    sacrebleu takes references as parallel streams (stream ``j`` holds the ``j``-th
    reference of every example). Examples with fewer references than the most are padded
    with ``None``, which sacrebleu skips; the signature then reads ``nrefs:var``.
    """
    _validate(predictions, references)
    n_streams = max(len(refs) for refs in references)
    streams = [
        [refs[j] if j < len(refs) else None for refs in references] for j in range(n_streams)
    ]
    bleu = BLEU()
    result = bleu.corpus_score(list(predictions), streams)
    return result.score, str(bleu.get_signature())


def perplexity(total_nll: float, n_tokens: int) -> float:
    """``exp(total_nll / n_tokens)``: perplexity from a summed token NLL in nats.

    Returns ``inf`` when the mean NLL is too large for a float.
    """
    if n_tokens <= 0:
        raise ValueError(f"perplexity needs n_tokens > 0, found n_tokens={n_tokens}")
    try:
        return math.exp(total_nll / n_tokens)
    except OverflowError:
        return math.inf


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


def score_summaries(
    predictions: Sequence[str], references: Sequence[Sequence[str]]
) -> dict[str, float | str]:
    """All text metrics of a system's summaries.

    Returns ``{"rouge1", "rouge2", "rougeL", "rougeLsum"`` (F1, 0-100), ``"bleu"``
    (0-100), ``"bleu_signature"``, ``"n_examples"}``.
    """
    metrics: dict[str, float | str] = dict(rouge_scores(predictions, references))
    metrics["bleu"], metrics["bleu_signature"] = bleu_score(predictions, references)
    metrics["n_examples"] = len(predictions)
    return metrics
