"""Records and their lines (:mod:`hiersum.inference.records`): the attended paragraphs of a line with their text."""

from __future__ import annotations

from hiersum.inference.records import attended_paragraphs, example_of


def test_the_attended_paragraphs_of_a_line_come_with_their_text_highest_weight_first():
    example = example_of({"title": "The title", "documents": ["p0\n\np1", "q0"]}, source="request", line=1)
    line = {"id": "request-1", "summary": "s", "score": -1.0, "n_paragraphs_kept": 4, "n_paragraphs_dropped": 0,
            "top_paragraphs": [{"document": 1, "paragraph": 0, "weight": 0.5},
                               {"document": -1, "paragraph": 0, "weight": 0.3},
                               {"document": 0, "paragraph": 1, "weight": 0.2}]}
    assert [(p["text"], p["document"], p["attention"]) for p in attended_paragraphs(line, example)] == [
        ("q0", 1, 0.5), ("The title", -1, 0.3), ("p1", 0, 0.2)]
    assert attended_paragraphs({**line, "top_paragraphs": []}, example) == []
    assert attended_paragraphs({"id": "x"}, example) == []
