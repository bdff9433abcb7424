"""The splits of a corpus folder read by data.format (hiersum.data.corpus_splits): SciTLDR, Multi-News, native."""

import json

import pytest

from hiersum.config import DataConfig
from hiersum.data.corpus_splits import read_split
from hiersum.data.formats.registry import validate_format
from hiersum.data.formats.scitldr import parse_scitldr_record
from hiersum.data.schema import RecordError
from tests.helpers.paths import SHARED_DIR

SCITLDR = SHARED_DIR / "data" / "scitldr-a"
MULTINEWS = SHARED_DIR / "data" / "multi-news-sample"


def test_scitldr_record_becomes_one_document_of_sentences_with_all_references():
    line = json.dumps({"paper_id": "p1", "title": " A Title ", "source": ["First  sentence.", " ", "Second."],
                       "target": ["tldr one", "tldr two"], "source_labels": [0, 1]})
    example = parse_scitldr_record(line, path="dev.jsonl", line=3)
    assert (example.id, example.title) == ("p1", "A Title")
    assert example.documents == [["First sentence.", "Second."]]
    assert example.references == ["tldr one", "tldr two"]


@pytest.mark.parametrize("record, field", [
    ({"paper_id": "p", "target": ["t"]}, "source"),
    ({"paper_id": "p", "source": "not a list", "target": ["t"]}, "source"),
    ({"paper_id": "p", "source": ["s."], "target": []}, "target"),
    ({"paper_id": "p", "source": ["s."], "target": [3]}, "target"),
])
def test_scitldr_errors_name_file_line_and_field(record, field):
    with pytest.raises(RecordError, match=f"dev.jsonl:7: field '{field}'"):
        parse_scitldr_record(json.dumps(record), path="dev.jsonl", line=7)


def test_read_split_dispatches_on_format(tmp_path):
    path = tmp_path / "dev.jsonl"
    path.write_text(json.dumps({"paper_id": "a", "source": ["x."], "target": ["y"]}) + "\n\n", encoding="utf-8")
    assert [e.id for e in read_split(path, "scitldr")] == ["a"]
    mn = tmp_path / "validation.jsonl"
    mn.write_text(json.dumps({"document": "p one \n \n p two ||||| other", "summary": "– the summary"}) + "\n")
    (example,) = read_split(mn, "multinews")
    assert example.documents == [["p one", "p two"], ["other"]] and example.references == ["the summary"]
    assert example.id == "validation-1"
    with pytest.raises(RecordError, match="field 'documents'"):
        read_split(mn, "jsonl")
    with pytest.raises(ValueError, match="not a text format"):
        read_split(mn, "wikisum")
    assert DataConfig(path="x", format="scitldr").format == "scitldr"
    with pytest.raises(ValueError, match="data.format: unknown format 'csv'; registered formats: aeslc, cnndm, "):
        validate_format(DataConfig(path="x", format="csv"))


@pytest.mark.skipif(not SCITLDR.is_dir(), reason="shared SciTLDR-A data not present")
def test_real_scitldr_dev_reads_with_several_references():
    examples = read_split(SCITLDR / "dev.jsonl", "scitldr")
    assert len(examples) == 619 and len({e.id for e in examples}) == 619
    assert max(len(e.references) for e in examples) > 1
    assert all(e.documents and e.documents[0] for e in examples)


@pytest.mark.skipif(not MULTINEWS.is_dir(), reason="shared Multi-News sample not present")
def test_real_multinews_sample_reads():
    examples = read_split(MULTINEWS / "validation.jsonl", "multinews")
    assert len(examples) == 250
    assert all(not e.references[0].startswith("–") for e in examples)


def test_an_unknown_format_is_a_usage_error_where_split_files_are_listed(tmp_path):
    """``hiersum train data.format=tsv`` checks its outputs against the split files first: one line there too."""
    import pytest

    from hiersum.config import DataConfig
    from hiersum.data.corpus_splits import existing_split_files
    from hiersum.errors import UsageError

    with pytest.raises(UsageError, match="data.format: unknown format 'tsv'; registered formats: aeslc, cnndm, jsonl"):
        existing_split_files(DataConfig(path=str(tmp_path), format="tsv"), ["train"])
