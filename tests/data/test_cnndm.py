"""``data=cnndm``: CNN/DailyMail in the public ``cnn_dailymail`` columns (id, article, highlights) as parquet, a
``datasets`` save_to_disk folder or JSONL (:mod:`hiersum.data.formats.cnndm`): the same examples from each, the
highlights one sentence a line up to the scorer, empty articles refused or skipped; and the shared corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hiersum.commands import evaluate as evaluate_command
from hiersum.config import DataConfig, OnError
from hiersum.data.corpus_splits import CorpusSplits, read_corpus_split, read_text_split
from hiersum.data.formats import read_records
from hiersum.data.formats.arrow import ColumnError
from hiersum.data.formats.registry import format_spec
from hiersum.data.schema import Example, RecordError
from hiersum.data.tokenizer import train_tokenizer
from tests.data.test_datasets_corpora import write_corpus
from tests.helpers.config import compose_config
from tests.helpers.paths import SHARED_DIR

CNNDM = SHARED_DIR / "data" / "cnn-dailymail"
ROWS = [
    {"id": "a1", "article": "( cnn ) police  arrest a man . he denies it .",
     "highlights": "police arrest a man\n\n  the man   denies it \n"},
    {"id": "a2", "article": "a first paragraph .\n\na second one .", "highlights": "two paragraphs ."},
]
EXPECTED = [
    Example(id="a1", title="", documents=[["( cnn ) police arrest a man . he denies it ."]],
            references=["police arrest a man\nthe man denies it"]),
    Example(id="a2", title="", documents=[["a first paragraph .", "a second one ."]], references=["two paragraphs ."]),
]
LAYOUTS = ("parquet", "parquet_shards", "save_to_disk", "jsonl")


def corpus(folder: Path, layout: str, train: list[dict] | None = None) -> Path:
    """``ROWS`` as each split of a CNN/DailyMail corpus (``train``: another train split) in ``layout``."""
    return write_corpus(folder, {"train": train or ROWS, "validation": ROWS, "test": ROWS}, layout)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_gives_the_same_examples(layout, tmp_path):
    folder = corpus(tmp_path / layout, layout)
    for split in ("train", "validation", "test"):
        assert read_corpus_split(folder, split, "cnndm") == EXPECTED


def test_the_highlights_reach_the_prepared_split_and_the_scorer_one_sentence_a_line(tmp_path, capsys):
    folder = corpus(tmp_path / "cnndm", "parquet")
    data = DataConfig(path=str(folder), format="cnndm", cache_dir=str(tmp_path / "cache"))
    tokenizer = train_tokenizer([r["article"] + r["highlights"] for r in ROWS] * 20, vocab_size=120)
    examples, _ = CorpusSplits(data, tokenizer).evaluation_split("test")
    assert examples[0].references == ["police arrest a man\nthe man denies it"]
    # one line, the highlights' sentences reversed: ROUGE-Lsum matches each reference sentence (100), ROUGE-L
    # the longest common subsequence of the whole texts (half); without the reference's line break both are 50
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps({"id": i, "summary": s}) + "\n" for i, s in
                                   (("a1", "the man denies it police arrest a man"), ("a2", "two paragraphs ."))))
    cfg = compose_config("evaluate", [f"data.path={folder}", "data=cnndm", f"predictions={predictions}",
                                      "baselines=[]", "bootstrap.samples=0"], tmp_path / "eval")
    model = evaluate_command.evaluate(cfg)["test"]["model"]  # predictions mode: no model, so no device to follow
    assert model["rougeLsum"] == pytest.approx(100.0) and model["rougeL"] == pytest.approx(75.0)  # (50 + 100) / 2
    lines = [json.loads(line) for line in (tmp_path / "eval" / "predictions.jsonl").read_text().splitlines()]
    assert lines[0]["reference"] == "police arrest a man\nthe man denies it"
    assert "run directory" in capsys.readouterr().out


def test_an_empty_article_is_refused_with_its_row_and_field_or_skipped(tmp_path):
    train = [ROWS[0], {"id": "empty", "article": "  \n ", "highlights": "nothing ."}, ROWS[1]]
    folder = corpus(tmp_path / "cnndm", "parquet", train=train)
    with pytest.raises(RecordError, match=r"train\.parquet:2: field 'article': expected some text, found an empty"):
        read_corpus_split(folder, "train", "cnndm")
    examples, errors = read_text_split(DataConfig(path=str(folder), format="cnndm", on_error=OnError.skip), "train")
    assert examples == EXPECTED
    assert [(e.line, e.field_name, e.record_id) for e in errors] == [(2, "article", "empty")]


@pytest.mark.parametrize(("row", "field", "message"), [
    ({"id": "x", "article": 42, "highlights": "h"}, "article", "expected a string, found int"),
    ({"id": "x", "highlights": "h"}, "article", "expected the article's text, found no such field"),
    ({"id": "x", "article": "text"}, "highlights", "expected the reference highlights, found no such field"),
    ({"id": "x", "article": "text", "highlights": ["h"]}, "highlights", "expected a string, found list"),
    ({"id": ["x"], "article": "text", "highlights": "h"}, "id", "expected a string, found list"),
])
def test_a_bad_jsonl_line_names_its_file_line_field_and_what_was_found(row, field, message, tmp_path):
    folder = corpus(tmp_path / "cnndm", "jsonl", train=[ROWS[0], row])
    with pytest.raises(RecordError, match=rf"train\.jsonl:2: field '{field}': {message}"):
        read_corpus_split(folder, "train", "cnndm")


def test_a_parquet_file_without_highlights_is_refused_naming_the_column(tmp_path):
    folder = corpus(tmp_path / "cnndm", "parquet", train=[{"id": "a", "article": "text ."}])
    with pytest.raises(ColumnError, match=r"train\.parquet: expected a column 'highlights' \(string\), found only "
                                          r"the columns id: string, article: string"):
        read_corpus_split(folder, "train", "cnndm")


def test_summarize_inputs_are_detected_by_the_article_field(tmp_path):
    folder = corpus(tmp_path / "cnndm", "jsonl")
    assert list(read_records(folder / "test.jsonl")) == EXPECTED
    assert list(read_records(corpus(tmp_path / "pq", "parquet") / "test.parquet")) == EXPECTED


@pytest.mark.skipif(not CNNDM.is_dir(), reason="shared CNN/DailyMail data not present")
def test_the_shared_corpus_reads_its_validation_split_and_refuses_the_empty_training_articles():
    spec = format_spec("cnndm")
    validation = list(spec.split_records(CNNDM, "validation"))
    assert len(validation) == 4368 and all(isinstance(r, Example) for r in validation)
    highlights = pq.read_table(CNNDM / "validation.parquet", columns=["highlights"]).column(0).to_pylist()
    assert [r.references[0].count("\n") for r in validation] == [h.strip().count("\n") for h in highlights]
    assert sum(r.references[0].count("\n") for r in validation) > len(validation)  # most hold 2 to 4 sentences
    counts = {"examples": 0, "article": 0, "id": 0}
    for record in spec.split_records(CNNDM, "train"):
        counts["examples" if isinstance(record, Example) else record.field_name] += 1
    # 39,227 rows: 67 empty articles; 572 rows repeat an earlier article (its id is the article's sha1)
    assert counts == {"examples": 38588, "article": 67, "id": 572}
