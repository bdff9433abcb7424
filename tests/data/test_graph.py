"""Paragraph graphs (hiersum.data.graph): similarity and discourse graphs, kept through paragraph
selection and padded by collate."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hiersum.data.batching import collate
from hiersum.data.graph import discourse_graph, entity_mentions, paragraph_graph, similarity_graph
from hiersum.data.schema import EncodedExample, Example
from hiersum.data.selection import EncodingConfig, encode_examples

TEXTS = [
    "Marela Dostovin founded the Ilvane Institute in Ostrel.",
    "The Ilvane Institute trains glass makers in Ostrel.",
    "Rain fell on the harbour all week.",
]


def test_similarity_graph_is_a_symmetric_tfidf_cosine():
    graph = similarity_graph(TEXTS)
    assert [graph[i][i] for i in range(3)] == [0.0, 0.0, 0.0]
    assert graph[0][1] == graph[1][0] and 0 < graph[0][1] < 1
    assert graph[0][1] > graph[0][2] > 0  # "the" is shared by all three, weighted down by idf
    assert similarity_graph(["same words here", "same words here"])[0][1] == pytest.approx(1.0)
    assert similarity_graph(["", "text"]) == [[0.0, 0.0], [0.0, 0.0]]


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
    assert encoded.graph == discourse_graph(["Marela Dostovin", *TEXTS[:2]])
    (plain,) = encode_examples([example], WordTokenizer(), replace(config, graph="none"))
    assert plain.graph is None


def example(i: int, paragraphs: list[list[int]], graph=None) -> EncodedExample:
    return EncodedExample(id=str(i), paragraphs=paragraphs, target=[11], references=["r"], provenance=[], graph=graph)


def test_collate_pads_graphs_with_zeros():
    batch = collate([example(0, [[7], [8]], [[0.0, 0.5], [0.5, 0.0]]), example(1, [[9]], [[0.0]]),
                     example(2, [[7], [8], [9]], [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])],
                    pad_id=0, bos_id=1, eos_id=2)
    assert batch.paragraph_graph.shape == (3, 3, 3)
    assert batch.paragraph_graph[0].tolist() == [[0.0, 0.5, 0.0], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert batch.paragraph_graph[1].abs().sum() == 0
    assert collate([example(0, [[7]])], pad_id=0, bos_id=1, eos_id=2).paragraph_graph is None


