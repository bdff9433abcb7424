"""Paragraph graphs (hiersum.data.graph): similarity and discourse graphs, equal to the pair-by-pair Python loops
they replaced, kept through paragraph selection and padded by collate."""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from hiersum.data.batching import collate
from hiersum.data.graph import discourse_graph, entity_mentions, paragraph_graph, similarity_graph
from hiersum.data.schema import EncodedExample, Example
from hiersum.data.selection import EncodingConfig, encode_examples
from tests.helpers.baseline_cases import all_cases

TEXTS = [
    "Marela Dostovin founded the Ilvane Institute in Ostrel.",
    "The Ilvane Institute trains glass makers in Ostrel.",
    "Rain fell on the harbour all week.",
]


def loop_similarity_graph(texts: list[str]) -> list[list[float]]:
    """The similarity graph as hiersum computed it until 2026-11-29, pair by pair (the reference)."""
    counts = [Counter(re.findall(r"\w+", text.lower())) for text in texts]
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


def loop_discourse_graph(texts: list[str]) -> list[list[float]]:
    """The discourse graph as hiersum computed it until 2026-11-29, pair by pair (the reference)."""
    mentions = [entity_mentions(text) for text in texts]
    n = len(texts)
    graph = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if mentions[i] and mentions[j]:
                shared = len(mentions[i] & mentions[j])
                graph[i][j] = graph[j][i] = shared / min(len(mentions[i]), len(mentions[j]))
    return graph


def test_similarity_graph_is_a_symmetric_tfidf_cosine():
    graph = similarity_graph(TEXTS)
    assert graph.dtype == np.float32 and graph.shape == (3, 3)
    assert [graph[i][i] for i in range(3)] == [0.0, 0.0, 0.0]
    assert graph[0][1] == graph[1][0] and 0 < graph[0][1] < 1
    assert graph[0][1] > graph[0][2] > 0  # "the" is shared by all three, weighted down by idf
    assert similarity_graph(["same words here", "same words here"])[0][1] == pytest.approx(1.0)
    assert similarity_graph(["", "text"]).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert similarity_graph([]).shape == (0, 0) and similarity_graph([""]).tolist() == [[0.0]]


def word_salad(n_texts: int, seed: int) -> list[str]:
    """``n_texts`` texts of 0-60 words of a Zipf-like vocabulary of 3,000 words, a tenth capitalised, some texts
    repeated: common words (the dense block of the products), rare ones (the sparse part), empty texts."""
    rng = random.Random(seed)
    words = [f"w{i}" if i % 10 else f"Name{i}" for i in range(3000)]
    weights = [1 / (rank + 1) for rank in range(len(words))]
    texts = [" ".join(rng.choices(words, weights=weights, k=rng.randint(0, 60))) for _ in range(n_texts)]
    return texts + rng.sample(texts, n_texts // 10)


def graph_texts() -> dict[str, list[str]]:
    """Texts to build graphs of: this file's, the paragraphs of the baseline cases (tests/helpers/baseline_cases:
    the real Multi-News ones where ``../shared`` is), and a word salad of 1,100 texts."""
    cases = {"texts": TEXTS, "salad": word_salad(1000, seed=3)}
    for name, example in all_cases().items():
        cases[name] = [paragraph for document in example.documents for paragraph in document]
    return cases


@pytest.mark.slow
def test_the_graphs_are_the_pair_by_pair_ones():
    """To 1e-6 (float32 storage; the products differ from the loops' sums in the last bits of float64), the
    discourse graph exactly up to the float32 rounding."""
    for name, texts in graph_texts().items():
        expected = np.array(loop_similarity_graph(texts), dtype=np.float64).reshape(len(texts), len(texts))
        np.testing.assert_allclose(similarity_graph(texts), expected, rtol=0, atol=1e-6, err_msg=name)
        expected = np.array(loop_discourse_graph(texts), dtype=np.float32).reshape(len(texts), len(texts))
        assert np.array_equal(discourse_graph(texts), expected), name


def test_discourse_graph_links_paragraphs_sharing_entity_mentions():
    assert entity_mentions(TEXTS[1]) == {"Ilvane", "Institute", "Ostrel"}  # sentence-initial "The" left out
    graph = discourse_graph(TEXTS)
    assert graph[0][1] == graph[1][0] == pytest.approx(1.0)  # all of paragraph 1's mentions recur in 0
    assert graph[0][2] == graph[1][2] == 0.0 and graph[2][2] == 0.0
    assert paragraph_graph(TEXTS, "none") is None
    with pytest.raises(ValueError, match="unknown paragraph graph"):
        paragraph_graph(TEXTS, "pagerank")


class WordTokenizer:
    """One id per word (10 + its length), enough for selection tests."""

    def encode_batch(self, texts):
        return [[10 + len(word) for word in text.split()] for text in texts]


def test_encode_examples_stores_the_graph_of_the_kept_paragraphs():
    example = Example(id="x", title="Marela Dostovin", documents=[TEXTS], references=["Marela founded it."])
    config = EncodingConfig(max_paragraphs=3, max_paragraph_tokens=4, max_target_tokens=8, graph="discourse")
    (encoded,) = encode_examples([example], WordTokenizer(), config)
    assert len(encoded.paragraphs) == len(encoded.graph) == 3  # title + 2 paragraphs
    assert np.array_equal(encoded.graph, discourse_graph(["Marela Dostovin", *TEXTS[:2]]))
    (plain,) = encode_examples([example], WordTokenizer(), replace(config, graph="none"))
    assert plain.graph is None


def example(i: int, paragraphs: list[list[int]], graph=None) -> EncodedExample:
    return EncodedExample(id=str(i), paragraphs=paragraphs, target=[11], references=["r"], provenance=[], graph=graph)


def test_collate_pads_graphs_with_zeros():
    graphs = [[[0.0, 0.5], [0.5, 0.0]], [[0.0]], [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]
    graphs = [np.array(graph, dtype=np.float32) for graph in graphs]
    batch = collate([example(0, [[7], [8]], graphs[0]), example(1, [[9]], graphs[1]),
                     example(2, [[7], [8], [9]], graphs[2])], pad_id=0, bos_id=1, eos_id=2)
    assert batch.paragraph_graph.shape == (3, 3, 3)
    assert batch.paragraph_graph[0].tolist() == [[0.0, 0.5, 0.0], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert batch.paragraph_graph[1].abs().sum() == 0
    assert collate([example(0, [[7]])], pad_id=0, bos_id=1, eos_id=2).paragraph_graph is None


