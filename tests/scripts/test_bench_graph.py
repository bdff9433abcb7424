"""scripts/bench_graph.py: paragraphs of a fixed length cut from real or synthetic text, each paragraph graph
timed at each size."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.scripts import load_script


def test_the_paragraphs_are_pieces_of_the_words_taken_again_from_the_start():
    bench = load_script("bench_graph")
    words = [f"w{i}" for i in range(7)]
    assert bench.paragraphs(words, 5, 3) == ["w0 w1 w2", "w3 w4 w5", "w0 w1 w2", "w3 w4 w5", "w0 w1 w2"]


def test_each_graph_of_each_size_is_timed(tmp_path: Path, capsys: pytest.CaptureFixture):
    bench = load_script("bench_graph")
    report = bench.main(["--paragraphs", "20", "50", "--words", "30", "--repeats", "2",
                         "--data", str(tmp_path / "absent.jsonl")])
    assert report["source"] == "synthetic" and report["words_a_paragraph"] == 30
    assert list(report["graphs"]) == ["similarity P=20", "discourse P=20", "similarity P=50", "discourse P=50"]
    for timing in report["graphs"].values():
        assert len(timing["runs"]) == 2 and timing["seconds"] >= 0
