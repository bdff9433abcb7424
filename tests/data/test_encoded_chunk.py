"""The chunk form of encoded examples (hiersum.data.encoded_chunk): what a tokenizing process of ``hiersum prepare``
hands back. Its bytes on disk are tested in tests/data/test_prepared.py (the same files for any number of
processes, chunks cut across shards)."""

from __future__ import annotations

import json
import pickle

import numpy as np

from hiersum.data.encoded_chunk import encoded_chunk
from hiersum.data.schema import EncodedExample, Example

PAIRS = [  # (example, encoding): 2, 0, 3 paragraphs; the second has no target, the third a graph
    (Example("a", "Title a", [["p1", "p2"]], ["ref a"]),
     EncodedExample("a", [[5, 6, 7], [8]], [9, 10], ["ref a"], [(0, 0), (0, 1)])),
    (Example("b", "", [], []), EncodedExample("b", [], [], [], [])),
    (Example("c", "T", [["x"], ["y", "z"]], ["r1", "r2"]),
     EncodedExample("c", [[11], [12, 13], []], [14], ["r1", "r2"], [(-1, 0), (0, 0), (1, 0)], 1,
                    np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32))),
]


def test_a_chunk_holds_the_ids_lengths_and_record_lines_of_its_examples():
    chunk = encoded_chunk(PAIRS, with_text=True)
    assert len(chunk) == 3
    assert chunk.paragraph_tokens.tolist() == [5, 6, 7, 8, 11, 12, 13]
    assert chunk.paragraph_lengths.tolist() == [3, 1, 1, 2, 0]
    assert chunk.example_paragraphs.tolist() == [2, 0, 3]
    assert chunk.target_tokens.tolist() == [9, 10, 14] and chunk.target_lengths.tolist() == [2, 0, 1]
    assert chunk.lengths.tolist() == [[2, 3, 2], [0, 0, 0], [3, 2, 1]] and chunk.lengths.dtype == np.int32
    records = [json.loads(line) for line in chunk.record_lines]
    assert all(line.endswith(b"\n") for line in chunk.record_lines)
    assert records[2] == {"id": "c", "references": ["r1", "r2"], "provenance": [[-1, 0], [0, 0], [1, 0]],
                          "n_dropped_paragraphs": 1, "graph": PAIRS[2][1].graph.tolist(), "title": "T",
                          "documents": [["x"], ["y", "z"]]}
    assert "title" not in json.loads(encoded_chunk(PAIRS, with_text=False).record_lines[0])


def test_a_part_of_a_chunk_is_the_chunk_of_those_examples():
    chunk = encoded_chunk(PAIRS, with_text=False)
    for start, stop in [(0, 1), (1, 3), (2, 3), (0, 3), (1, 1)]:
        part, alone = chunk.part(start, stop), encoded_chunk(PAIRS[start:stop], with_text=False)
        for name in ("paragraph_tokens", "paragraph_lengths", "example_paragraphs", "target_tokens",
                     "target_lengths", "lengths"):
            assert np.array_equal(getattr(part, name), getattr(alone, name)), (start, stop, name)
        assert part.record_lines == alone.record_lines


def test_a_chunk_survives_pickling_and_an_empty_one_is_empty():
    chunk = pickle.loads(pickle.dumps(encoded_chunk(PAIRS, with_text=False)))
    assert chunk.paragraph_tokens.tolist() == [5, 6, 7, 8, 11, 12, 13] and len(chunk) == 3
    empty = encoded_chunk([], with_text=False)
    assert len(empty) == 0 and empty.lengths.shape == (0, 3) and empty.paragraph_tokens.size == 0
