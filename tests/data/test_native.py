import json
from pathlib import Path

import pytest

from hiersum.data.formats.lines import split_paragraphs
from hiersum.data.formats.native import iter_jsonl, read_jsonl
from hiersum.data.schema import RecordError


def write_lines(path: Path, lines: list[str | bytes]) -> Path:
    with open(path, "wb") as handle:
        for line in lines:
            handle.write((line if isinstance(line, bytes) else line.encode()) + b"\n")
    return path


def test_split_paragraphs_on_blank_lines_and_collapses_whitespace():
    assert split_paragraphs("a  b\nc\n\n  \n\nd\n \n e") == ["a b c", "d", "e"]


def test_reads_string_and_presplit_documents_and_reference_lists(tmp_path):
    path = write_lines(tmp_path / "x.jsonl", [
        json.dumps({"id": "a", "title": "T", "documents": ["p1\n\np2", ["q1", " ", "q2"]], "summary": "s"}),
        json.dumps({"documents": ["only"], "summary": ["r1", "r2"]}),
    ])
    first, second = read_jsonl(path)
    assert first.documents == [["p1", "p2"], ["q1", "q2"]]
    assert first.references == ["s"] and first.title == "T"
    assert second.id == "x-2" and second.references == ["r1", "r2"]


@pytest.mark.parametrize(
    ("line", "field", "expected"),
    [
        ("{not json", None, "invalid JSON"),
        ("[1, 2]", None, "found list"),
        (json.dumps({"summary": "s"}), "documents", "no such field"),
        (json.dumps({"documents": [], "summary": "s"}), "documents", "empty list"),
        (json.dumps({"documents": [3], "summary": "s"}), "documents[0]", "found int"),
        (json.dumps({"documents": ["\n\n"], "summary": "s"}), "documents", "only empty"),
        (json.dumps({"documents": ["d"], "summary": 5}), "summary", "found int"),
        (json.dumps({"documents": ["d"]}), "summary", "found none"),
        (json.dumps({"documents": ["d"], "summary": "s", "title": 1}), "title", "found int"),
    ],
)
def test_malformed_records_name_file_line_and_field(tmp_path, line, field, expected):
    path = write_lines(tmp_path / "bad.jsonl", [json.dumps({"documents": ["ok"], "summary": "s"}), "", line])
    with pytest.raises(RecordError) as info:
        read_jsonl(path)
    error = info.value
    assert error.line == 3 and error.field_name == field
    assert str(error).startswith(f"{path}:3") and expected in str(error)


def test_iter_jsonl_reports_invalid_utf8_and_continues(tmp_path):
    path = write_lines(tmp_path / "mixed.jsonl", [b"\xff\xfe{", json.dumps({"documents": ["d"]})])
    first, second = list(iter_jsonl(path, require_summary=False))
    assert isinstance(first, RecordError) and first.line == 1 and "UTF-8" in str(first)
    assert second.documents == [["d"]] and second.references == []
