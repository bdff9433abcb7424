"""Paragraph selection and encoding: Example (text) -> EncodedExample (ids in a P x T grid).

Selection rules (``data.selection``): ``first`` and ``round_robin`` order paragraphs by position;
``tfidf`` and ``ranker`` score every paragraph with a :class:`ParagraphScorer` and keep the best first
(ties in document order). The data stage knows no network: a trained ranker reaches it through the
:data:`SCORERS` registry, whose ``ranker`` entry ``hiersum.checkpoints.ranker`` registers (the hiersum
commands import it).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from hiersum.config import DataConfig
from hiersum.config.selection import SELECTION_FIELDS, ParagraphSelection
from hiersum.data.graph import paragraph_graph
from hiersum.data.normalization import normalize_text
from hiersum.data.oov_words import cut, extended_ids
from hiersum.data.paragraphs import paragraphed
from hiersum.data.schema import EncodedExample, Example
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.registry import Registry

TITLE_DOCUMENT = -1
"""Provenance document index of the title paragraph."""


@dataclass
class EncodingConfig(ParagraphSelection):
    """What encoding an example reads: its paragraph selection (:class:`~hiersum.config.selection.ParagraphSelection`,
    the meaning of each field there), the cut of its target and the paragraph graph its model uses."""

    max_target_tokens: int = 96
    """Summary tokens kept (``data.max_target_tokens``)."""
    graph: str = "none"
    """Paragraph graph stored on each example (``model.graph``; see ``hiersum/data/graph.py``)."""
    copy_oov: bool = False
    """Each ``<unk>`` of the source as its text's extended id V + k, and each target ``<unk>`` whose text the source
    holds as that id (``model.copy_oov``; :mod:`hiersum.data.oov_words`)."""


def encoding_config(config: DataConfig, *, graph: str = "none", copy_oov: bool = False,
                    evaluation: bool = False) -> EncodingConfig:
    """The encoding of ``config``'s examples; ``graph``: the model's paragraph graph (``model.graph``);
    ``copy_oov``: the model's ``model.copy_oov``; ``evaluation``: for a validation or test split
    (``data.eval_max_paragraphs`` applies)."""
    max_paragraphs = config.max_paragraphs
    if evaluation and config.eval_max_paragraphs:
        max_paragraphs = config.eval_max_paragraphs
    selection = {name: getattr(config, name) for name in SELECTION_FIELDS}
    return EncodingConfig(**{**selection, "max_paragraphs": max_paragraphs,
                             "ranker": config.ranker if config.selection == "ranker" else None},
                          max_target_tokens=config.max_target_tokens, graph=graph, copy_oov=copy_oov)


class ParagraphScorer(Protocol):
    """Scores the paragraphs of examples; a higher score is kept first."""

    def score(self, examples: Sequence[Example]) -> list[list[float]]:
        """One list per example: a score per paragraph, in document order (document 0's paragraphs,
        then document 1's...), i.e. the order of ``order_paragraphs(documents, "first")``."""
        ...


WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` (the tf-idf vocabulary)."""
    return WORD.findall(text.lower())


def _tfidf_vector(counts: Counter[str], idf: dict[str, float]) -> dict[str, float]:
    """Sublinear tf (1 + log tf) x idf, L2-normalised (an empty text: the empty vector)."""
    vector = {word: (1.0 + math.log(count)) * idf[word] for word, count in counts.items()}
    norm = math.sqrt(sum(value * value for value in vector.values()))
    return {word: value / norm for word, value in vector.items()} if norm > 0 else {}


def _dot(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(value * b.get(word, 0.0) for word, value in a.items())


class TfidfScorer:
    """Cosine similarity of each paragraph's tf-idf vector to the title's (Liu et al. 2018's ranking of
    WikiSum paragraphs), or, for an example without a title, to the centroid (the mean of its paragraphs'
    unit vectors). Document frequencies are counted over the example's own paragraphs (smoothed idf
    ``log((1 + N) / (1 + df)) + 1``), so a score needs no corpus statistics and nothing to fit."""

    def score(self, examples: Sequence[Example]) -> list[list[float]]:
        return [self.score_example(example) for example in examples]

    @staticmethod
    def score_example(example: Example) -> list[float]:
        counts = [Counter(words(paragraph)) for document in example.documents for paragraph in document]
        frequency = Counter(word for count in counts for word in count)
        title = Counter(words(example.title or ""))
        idf = {word: math.log((1 + len(counts)) / (1 + frequency[word])) + 1.0 for word in frequency | title}
        vectors = [_tfidf_vector(count, idf) for count in counts]
        if title:
            query = _tfidf_vector(title, idf)
        else:
            query = Counter()
            for vector in vectors:
                query.update(vector)
        return [_dot(vector, query) for vector in vectors]


SCORERS: Registry[Callable[[EncodingConfig], ParagraphScorer]] = Registry("data.selection", "paragraph scorer")
"""Selection rule -> a function making its scorer from the selection settings. ``tfidf`` is built in;
``ranker`` is registered by ``hiersum.checkpoints.ranker`` (it loads ``EncodingConfig.ranker``)."""
SCORERS.register("tfidf", lambda config: TfidfScorer())


def paragraph_scorer(config: EncodingConfig) -> ParagraphScorer | None:
    """The scorer of ``config.selection`` (None for the positional rules ``first`` and ``round_robin``)."""
    if config.selection in ("first", "round_robin"):
        return None
    if config.selection == "ranker" and "ranker" not in SCORERS:
        raise ValueError("data.selection=ranker: no ranker loader is registered; import hiersum.checkpoints.ranker "
                         "(the hiersum commands do)")
    return SCORERS.lookup(config.selection)(config)


def ranked_order(documents: Sequence[Sequence[str]], scores: Sequence[float]) -> list[tuple[int, int]]:
    """(document, paragraph) indices by decreasing score; ``scores`` in document order; ties keep
    document order."""
    positions = order_paragraphs(documents, "first")
    if len(scores) != len(positions):
        raise ValueError(f"a paragraph scorer gave {len(scores)} scores for {len(positions)} paragraphs")
    ranking = sorted(range(len(positions)), key=lambda index: -scores[index])
    return [positions[index] for index in ranking]


def select_paragraphs(
    examples: Sequence[Example], rule: str, scorer: ParagraphScorer | None = None
) -> list[list[tuple[int, int]]]:
    """The (document, paragraph) order of each example under ``rule`` (a scoring rule needs ``scorer``)."""
    if rule in ("first", "round_robin"):
        return [order_paragraphs(example.documents, rule) for example in examples]
    if scorer is None:
        raise ValueError(f"paragraph selection {rule!r} needs a paragraph scorer")
    scores = scorer.score(examples)
    return [ranked_order(example.documents, example_scores)
            for example, example_scores in zip(examples, scores, strict=True)]


def order_paragraphs(documents: Sequence[Sequence[str]], rule: str) -> list[tuple[int, int]]:
    """(document, paragraph) indices in selection order.

    ``first``: document order. ``round_robin``: the first paragraph of every document,
    then every second paragraph, and so on.
    """
    if rule == "first":
        return [(d, p) for d, doc in enumerate(documents) for p in range(len(doc))]
    if rule == "round_robin":
        longest = max((len(doc) for doc in documents), default=0)
        return [(d, p) for p in range(longest) for d, doc in enumerate(documents) if p < len(doc)]
    raise ValueError(f"unknown positional paragraph selection rule {rule!r}: expected 'first' or 'round_robin'")


def encode_examples(
    examples: Sequence[Example], tokenizer: SubwordTokenizer, config: EncodingConfig
) -> list[EncodedExample]:
    """The examples' text normalized and their paragraphs made by the paragraph rule (``config.text_normalization``,
    ``config.paragraphs``: :func:`hiersum.data.paragraphs.paragraphed`), then encoded (:func:`encode_paragraphed`);
    ``provenance`` indexes the paragraphs that rule made. A caller that also needs those paragraphs (the attended
    paragraphs of a summary) makes them once and calls :func:`encode_paragraphed`."""
    return encode_paragraphed(paragraphed(examples, tokenizer, config), tokenizer, config)


def encode_paragraphed(
    examples: Sequence[Example], tokenizer: SubwordTokenizer, config: EncodingConfig
) -> list[EncodedExample]:
    """Select up to P paragraphs per example (``config.selection``), tokenize them and cut each to T tokens.

    ``examples``: the output of :func:`hiersum.data.paragraphs.paragraphed` under ``config`` (normalized, their
    paragraphs the rule's); the target is normalized here (``config.text_normalization``; the references kept for
    scoring never are).

    With ``title_paragraph`` the title (when present) is the first paragraph, so the
    model knows which entity or topic the summary is about. With ``graph`` other than ``none``
    each example carries the graph of its kept paragraphs, computed from their full text. With ``copy_oov`` each
    ``<unk>`` is its text's extended id and the example keeps those texts (:mod:`hiersum.data.oov_words`).
    """
    orders = select_paragraphs(examples, config.selection, paragraph_scorer(config))
    selected: list[tuple[list[tuple[int, int]], list[str], int]] = []  # provenance, texts, dropped count
    for example, order in zip(examples, orders, strict=True):
        slots = config.max_paragraphs
        provenance: list[tuple[int, int]] = []
        texts: list[str] = []
        if config.title_paragraph and example.title:
            provenance.append((TITLE_DOCUMENT, 0))
            texts.append(example.title)
            slots -= 1
        kept = order[: max(slots, 0)]
        provenance += kept
        texts += [example.documents[d][p] for d, p in kept]
        selected.append((provenance, texts, len(order) - len(kept)))
    # one call for every text of every example: the tokenizer's batch encoding pays its fixed cost once
    targets = [[normalize_text(text, config.text_normalization) for text in example.references[:1]]
               for example in examples]
    every_text = [text for target, (_, texts, _) in zip(targets, selected, strict=True) for text in (*texts, *target)]
    if config.copy_oov:
        spelled = iter(tokenizer.encode_batch_spelled(every_text))
    else:
        ids = iter(tokenizer.encode_batch(every_text))
    encoded = []
    for example, (provenance, texts, dropped) in zip(examples, selected, strict=True):
        oov_words: list[str] = []
        if config.copy_oov:
            spelled_paragraphs = [cut(next(spelled), config.max_paragraph_tokens) for _ in texts]
            spelled_target = next(spelled) if example.references else None
            target_length = 0 if spelled_target is None else len(spelled_target.ids)
            extended = extended_ids(
                spelled_paragraphs, None if spelled_target is None else cut(spelled_target, config.max_target_tokens),
                vocab_size=tokenizer.vocab_size)
            paragraphs, target, oov_words = extended.paragraphs, extended.target, extended.oov_words
        else:
            paragraphs = [next(ids)[: config.max_paragraph_tokens] for _ in texts]
            whole_target = next(ids) if example.references else []
            target_length, target = len(whole_target), whole_target[: config.max_target_tokens]
        encoded.append(EncodedExample(
            id=example.id,
            paragraphs=paragraphs,
            target=target,
            oov_words=oov_words,
            references=list(example.references),
            provenance=provenance,
            n_dropped_paragraphs=dropped,
            graph=paragraph_graph(texts, config.graph),
            target_truncated=target_length > config.max_target_tokens,
        ))
    return encoded
