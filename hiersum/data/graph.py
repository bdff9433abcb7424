"""Paragraph graphs for the graph-informed inter-paragraph attention (``model.graph``).

A graph is a P x P matrix of weights in [0, 1] between the selected paragraphs of one example,
computed from their text when the example is encoded. The diagonal is 0: a graph describes
relations between different paragraphs, and a paragraph's attention to itself is not biased.

``similarity``
    Cosine similarity of tf-idf vectors of the paragraphs' lowercased words, the idf being
    computed over the example's own paragraphs (smoothed: ``log((1 + P) / (1 + df)) + 1``), so that
    no corpus statistics are needed and the graph of an example depends on that example only.
``discourse``
    An approximation of the discourse graph of Christensen et al. (2013) used by Liu & Lapata by
    entity continuation: the entity mentions of a paragraph are its capitalised words (stop words
    such as a sentence-initial "The" left out); the weight of i -> j is the share of mentions the
    two paragraphs have in common, ``|E_i & E_j| / min(|E_i|, |E_j|)`` (0 when either has none).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

GRAPHS = ("none", "similarity", "discourse")

_WORD = re.compile(r"\w+")
_CAPITALISED = re.compile(r"\b[A-Z][\w'-]*")
_STOPWORDS = frozenset(
    "a an the and or but if in on at of to for from by with as is was were be been are it its he she "
    "they we you i his her their our this that these those there here when while after before during "
    "since then also however although though because so not no yes all some many most".split()
)


def similarity_graph(texts: Sequence[str]) -> list[list[float]]:
    """tf-idf cosine similarity between paragraphs (diagonal 0)."""
    counts = [Counter(_WORD.findall(text.lower())) for text in texts]
    document_frequency = Counter(word for count in counts for word in count)
    n = len(texts)
    idf = {word: math.log((1 + n) / (1 + df)) + 1 for word, df in document_frequency.items()}
    vectors = [{word: tf * idf[word] for word, tf in count.items()} for count in counts]
    norms = [math.sqrt(sum(v * v for v in vector.values())) for vector in vectors]
    graph = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if norms[i] and norms[j]:
                small, large = sorted((vectors[i], vectors[j]), key=len)
                dot = sum(value * large.get(word, 0.0) for word, value in small.items())
                graph[i][j] = graph[j][i] = dot / (norms[i] * norms[j])
    return graph


def entity_mentions(text: str) -> set[str]:
    """Capitalised words of ``text`` that are not stop words (a crude entity-mention detector)."""
    return {word for word in _CAPITALISED.findall(text) if word.lower() not in _STOPWORDS}


def discourse_graph(texts: Sequence[str]) -> list[list[float]]:
    """Entity-continuation links: shared capitalised mentions over the smaller mention set (diagonal 0)."""
    mentions = [entity_mentions(text) for text in texts]
    n = len(texts)
    graph = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if mentions[i] and mentions[j]:
                shared = len(mentions[i] & mentions[j])
                graph[i][j] = graph[j][i] = shared / min(len(mentions[i]), len(mentions[j]))
    return graph


def paragraph_graph(texts: Sequence[str], kind: str) -> list[list[float]] | None:
    """The ``kind`` graph (``similarity`` or ``discourse``) of an example's paragraphs; None for ``none``."""
    if kind == "none":
        return None
    if kind == "similarity":
        return similarity_graph(texts)
    if kind == "discourse":
        return discourse_graph(texts)
    raise ValueError(f"unknown paragraph graph {kind!r}: expected one of {GRAPHS}")
