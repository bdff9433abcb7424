"""Paragraph graphs for the graph-informed inter-paragraph attention (``model.graph``).

A graph is a float32 [P, P] array of weights in [0, 1] between the selected paragraphs of one example,
computed from their text when the example is encoded, every pair at once (sparse products of the paragraphs' term
matrices, :mod:`hiersum.data.similarity`). The diagonal is 0: a graph describes
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

import re
from collections.abc import Sequence

import numpy as np

from hiersum.data.similarity import pair_products, term_matrix, tfidf_cosine

GRAPHS = ("none", "similarity", "discourse")

_CAPITALISED = re.compile(r"\b[A-Z][\w'-]*")
_STOPWORDS = frozenset(
    "a an the and or but if in on at of to for from by with as is was were be been are it its he she "
    "they we you i his her their our this that these those there here when while after before during "
    "since then also however although though because so not no yes all some many most".split()
)


def similarity_graph(texts: Sequence[str]) -> np.ndarray:
    """float32 [P, P]: tf-idf cosine similarity between paragraphs (diagonal 0;
    :func:`hiersum.data.similarity.tfidf_cosine`)."""
    return tfidf_cosine(texts).astype(np.float32)


def entity_mentions(text: str) -> set[str]:
    """Capitalised words of ``text`` that are not stop words (a crude entity-mention detector)."""
    return {word for word in _CAPITALISED.findall(text) if word.lower() not in _STOPWORDS}


def discourse_graph(texts: Sequence[str]) -> np.ndarray:
    """float32 [P, P]: entity-continuation links, shared capitalised mentions over the smaller mention set
    (diagonal 0)."""
    mentions = term_matrix([sorted(entity_mentions(text)) for text in texts])  # [P, entities], 0 or 1
    shared = pair_products(mentions)  # [P, P] mentions in common
    sizes = np.diff(mentions.indptr).astype(np.float64)
    smaller = np.minimum(sizes[:, None], sizes[None, :])
    graph = np.divide(shared, smaller, out=np.zeros_like(shared), where=smaller > 0)
    np.fill_diagonal(graph, 0.0)
    return graph.astype(np.float32)


def paragraph_graph(texts: Sequence[str], kind: str) -> np.ndarray | None:
    """The ``kind`` graph (``similarity`` or ``discourse``, float32 [P, P]) of an example's paragraphs; None for
    ``none``."""
    if kind == "none":
        return None
    if kind == "similarity":
        return similarity_graph(texts)
    if kind == "discourse":
        return discourse_graph(texts)
    raise ValueError(f"unknown paragraph graph {kind!r}: expected one of {GRAPHS}")
