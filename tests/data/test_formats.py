"""Input formats of batch summarization, and the resumable JSONL output."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from hiersum.data.formats import InputError, detect_json_format, read_records
from hiersum.data.jsonl_output import JsonlAppender, OutputError, completed_ids
from hiersum.data.schema import Example, RecordError


def write(path: Path, lines: list[str | bytes]) -> Path:
    path.write_bytes(b"".join((line if isinstance(line, bytes) else line.encode()) + b"\n" for line in lines))
    return path


def split(items):
    items = list(items)
    return [i for i in items if isinstance(i, Example)], [i for i in items if isinstance(i, RecordError)]


def test_multinews_articles_and_paragraphs(tmp_path):
    document = "First para of A.\n \nSecond para of A. ||||| Only para of B.\n \n ||||| "
    source = write(tmp_path / "mn.jsonl", [json.dumps({"document": document, "summary": "– The summary."})])
    (example,) = read_records(source)
    assert example.id == "mn-1"
    assert example.documents == [["First para of A.", "Second para of A."], ["Only para of B."]]
    assert example.references == ["The summary."]


@pytest.mark.parametrize(
    ("record", "field", "reason"),
    [
        ({"summary": "x"}, "document", "no such field"),
        ({"document": ["a"]}, "document", "expected a string, found list"),
        ({"document": " ||||| \n \n "}, "document", "empty document"),
        ({"document": "text", "summary": 3}, "summary", "found int"),
        ({"document": "text", "id": [1]}, "id", "found list"),
    ],
)
def test_multinews_validation_names_line_and_field(tmp_path, record, field, reason):
    good = json.dumps({"document": "fine text", "id": "ok"})
    source = write(tmp_path / "mn.jsonl", [good, json.dumps(record)])
    examples, errors = split(read_records(source, input_format="multinews"))
    assert [e.id for e in examples] == ["ok"]
    (error,) = errors
    assert (error.path, error.line, error.field_name) == (str(source), 2, field)
    assert reason in error.reason


def test_invalid_utf8_bad_json_and_duplicate_ids_are_record_errors(tmp_path):
    first = json.dumps({"id": "a", "documents": ["x"]})
    lines = [first, b'{"id": "b", "documents": ["\xff"]}', "{oops", json.dumps({"id": "a", "documents": ["y"]})]
    source = write(tmp_path / "in.jsonl", lines)
    examples, errors = split(read_records(source))
    assert [e.id for e in examples] == ["a"] and examples[0].documents == [["x"]]
    assert [(e.line, e.field_name, e.record_id) for e in errors] == [(2, None, None), (3, None, None), (4, "id", "a")]
    assert "UTF-8" in errors[0].reason and "invalid JSON" in errors[1].reason and "line 1" in errors[2].reason


def test_native_error_carries_the_record_id(tmp_path):
    source = write(tmp_path / "in.jsonl", [json.dumps({"id": "x7", "documents": 7})])
    (error,) = read_records(source)
    assert isinstance(error, RecordError) and error.record_id == "x7" and error.field_name == "documents"


def test_auto_detection(tmp_path):
    assert detect_json_format([b"\n", b'{"document": "a"}\n']) == "multinews"
    assert detect_json_format([b'{"documents": ["a"]}\n']) == "native"
    assert detect_json_format([b"{broken\n"]) == "native"
    assert detect_json_format([b"Plain words.\n"]) == "text"
    text = tmp_path / "note.txt"
    text.write_text("Para one.\n\nPara two.\n", encoding="utf-8")
    (example,) = read_records(text)
    assert example.id == "note" and example.documents == [["Para one.", "Para two."]]


def test_text_folder_in_name_order_and_stdin(tmp_path, monkeypatch):
    for name, text in (("b.txt", "Bee."), ("a.txt", "Ay.\n\nAy two."), ("c.txt", b"\xfe")):
        (tmp_path / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    examples, errors = split(read_records(tmp_path))
    assert [e.id for e in examples] == ["a", "b"] and errors[0].record_id == "c"
    monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=io.BytesIO(b"Some text.\n\nMore.\n")))
    (example,) = read_records("-")
    assert example.id == "stdin" and example.documents == [["Some text.", "More."]]


def test_unreadable_inputs_raise_input_error(tmp_path):
    with pytest.raises(InputError, match="not found"):
        read_records(tmp_path / "missing.jsonl")
    with pytest.raises(InputError, match="found none"):
        read_records(tmp_path)  # a folder without .txt files
    with pytest.raises(InputError, match="input_format"):
        read_records(tmp_path, input_format="csv")


def test_completed_ids_cut_a_partial_last_line(tmp_path):
    output = tmp_path / "out.jsonl"
    with JsonlAppender(output) as writer:
        writer.write({"id": "a", "summary": "é"})
        writer.write({"id": "b", "summary": "x"})
    with open(output, "ab") as handle:
        handle.write(b'{"id": "c", "summ')
    assert completed_ids(output) == ["a", "b"]
    assert output.read_text(encoding="utf-8").endswith('"x"}\n')
    with JsonlAppender(output) as writer:
        writer.write({"id": "c"})
    assert completed_ids(output) == ["a", "b", "c"]
    output.write_text("not json\n", encoding="utf-8")
    with pytest.raises(OutputError, match="resume=false"):
        completed_ids(output)


def test_real_multinews_sample_reads_without_errors():
    from tests.helpers.paths import SHARED_DIR

    source = SHARED_DIR / "data" / "multi-news-sample" / "validation.jsonl"
    if not source.is_file():
        pytest.skip(f"{source} not found")
    examples, errors = split(read_records(source))
    assert errors == [] and len(examples) == 250
    assert all(e.references and not e.references[0].startswith("–") for e in examples)
    assert max(len(e.documents) for e in examples) > 1
    assert all(all(p.strip() for d in e.documents for p in d) for e in examples)
