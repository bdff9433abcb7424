"""Corpora in the Hugging Face ``datasets`` layouts (hiersum.data.formats.arrow): a ``save_to_disk`` folder or
per-split parquet files, written here by ``datasets`` itself, read as the JSONL of every data preset, trained on,
prepared and summarized; and the one-line errors of a missing or mistyped column and of a missing split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from datasets import Dataset, DatasetDict

from hiersum.commands.prepare import prepare
from hiersum.commands.summarize import summarize
from hiersum.commands.train import train
from hiersum.data.corpus_splits import read_corpus_split
from hiersum.data.formats import InputError, read_records
from hiersum.data.formats.arrow import ColumnError
from hiersum.data.formats.wikisum import read_wikisum
from hiersum.data.selection import EncodingConfig
from hiersum.errors import UsageError
from tests.data.test_wikisum import SpecialTokenizer, write_shards
from tests.helpers.checkpoints import summarizer_checkpoint
from tests.helpers.cli import assert_usage_error, run_in_process
from tests.helpers.config import TINY_OVERRIDES, compose_config, device_overrides, tiny_train_config
from tests.helpers.corpus import TINY_SIZES
from tests.helpers.paths import SAMPLE_DIR

SPLITS = tuple(TINY_SIZES)
LAYOUTS = ("save_to_disk", "parquet", "parquet_shards")
DATA_OVERRIDES = [o for o in TINY_OVERRIDES if o.startswith(("model=", "tokenizer.", "data."))]


def native_records(split: str) -> list[dict]:
    """The first records of the sample's ``split`` (the tiny corpus), as dicts."""
    with open(SAMPLE_DIR / f"{split}.jsonl", encoding="utf-8") as handle:
        return [json.loads(next(handle)) for _ in range(TINY_SIZES[split])]


def as_format(record: dict, data_format: str) -> dict:
    """A native record in the fields of ``data_format`` (its JSON line's object and its row)."""
    if data_format == "multinews":
        return {"id": record["id"], "document": " ||||| ".join(record["documents"]), "summary": record["summary"]}
    if data_format == "scitldr":
        sentences = [p for document in record["documents"] for p in document.split("\n\n")]
        return {"paper_id": record["id"], "title": record["title"], "source": sentences, "target": [record["summary"]]}
    return record


def write_corpus(folder: Path, splits: dict[str, list[dict]], layout: str, *, jsonl_names: dict | None = None) -> Path:
    """``splits`` as a ``datasets`` corpus in ``folder`` (``layout``: :data:`LAYOUTS`), or as JSONL files
    (``jsonl``; file stems ``jsonl_names``); written by ``datasets``."""
    folder.mkdir(parents=True)
    if layout == "jsonl":
        for split, rows in splits.items():
            name = (jsonl_names or {}).get(split, split)
            (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return folder
    corpus = DatasetDict({split: Dataset.from_list(rows) for split, rows in splits.items()})
    if layout == "save_to_disk":  # the train split in two Arrow files
        corpus.save_to_disk(str(folder), num_shards={split: min(2, len(rows)) if split == "train" else 1
                                                     for split, rows in splits.items()})
    elif layout == "parquet":
        for split, dataset in corpus.items():
            dataset.to_parquet(str(folder / f"{split}.parquet"))
    else:  # as the Hub serves them: data/<split>-0000k-of-0000n.parquet
        for split, dataset in corpus.items():
            n = min(2, len(dataset))
            for k in range(n):
                shard = dataset.shard(n, k, contiguous=True)
                shard.to_parquet(str(folder / "data" / f"{split}-{k:05d}-of-{n:05d}.parquet"))
    return folder


def corpus_of(data_format: str, layout: str, folder: Path) -> Path:
    splits = {split: [as_format(r, data_format) for r in native_records(split)] for split in SPLITS}
    names = {"validation": "dev"} if data_format == "scitldr" else None
    return write_corpus(folder, splits, layout, jsonl_names=names)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("data_format", ["jsonl", "multinews", "scitldr"])
def test_every_text_preset_reads_a_datasets_corpus_as_its_jsonl(data_format, layout, tmp_path):
    jsonl = corpus_of(data_format, "jsonl", tmp_path / "jsonl")
    tables = corpus_of(data_format, layout, tmp_path / layout)
    for split in SPLITS:
        expected = read_corpus_split(jsonl, split, data_format)
        assert len(expected) == TINY_SIZES[split] and expected[0].references
        assert read_corpus_split(tables, split, data_format) == expected


@pytest.mark.parametrize("layout", LAYOUTS)
def test_wikisum_reads_a_datasets_corpus_of_its_records_as_its_shards(layout, tmp_path):
    write_shards(tmp_path)
    shards = [torch.load(tmp_path / f"WIKI.train.{k}.pt", weights_only=True) for k in range(2)]
    rows = {"train": shards[0] + shards[1], "test": torch.load(tmp_path / "WIKI.test.0.pt", weights_only=True)}
    corpus = write_corpus(tmp_path / "corpus", rows, layout)
    config = EncodingConfig(max_paragraphs=2, max_paragraph_tokens=2, max_target_tokens=2)
    for split in ("train", "test"):
        examples, encoded = read_wikisum(tmp_path, split, SpecialTokenizer(), config, with_text=False)
        table_examples, table_encoded = read_wikisum(corpus, split, SpecialTokenizer(), config, with_text=False)
        assert [e.references for e in table_examples] == [e.references for e in examples]
        assert [(e.paragraphs, e.target) for e in table_encoded] == [(e.paragraphs, e.target) for e in encoded]
        assert len({e.id for e in table_encoded}) == len(rows[split])


def test_train_on_a_save_to_disk_corpus_and_on_its_parquet_files(tmp_path, device):
    metrics = {}
    for layout in ("save_to_disk", "parquet_shards"):
        corpus = corpus_of("multinews", layout, tmp_path / layout)
        cfg = tiny_train_config(corpus, tmp_path / f"run-{layout}", device, "data=multinews", "debug=fast_dev_run")
        metrics[layout] = train(cfg)
        assert metrics[layout]["test"]["model"]["perplexity"] > 1.0
    # the same records give the same tokenizer and examples, hence the same model and test figures
    assert metrics["save_to_disk"]["test"]["model"] == metrics["parquet_shards"]["test"]["model"]


def test_prepare_a_save_to_disk_corpus(tmp_path, capsys):
    corpus = corpus_of("jsonl", "save_to_disk", tmp_path / "corpus")
    options = [*DATA_OVERRIDES, f"data.path={corpus}", f"data.cache_dir={tmp_path / 'cache'}"]
    report = prepare(compose_config("prepare", options, tmp_path / "prepare"))
    assert {split: entry["examples"] for split, entry in report.items()} == TINY_SIZES
    assert "train: 40 examples, 0 records left out" in capsys.readouterr().out


def test_summarize_a_parquet_file_and_a_save_to_disk_split(tmp_path, device):
    checkpoint = tmp_path / "tiny.ckpt"
    torch.save(summarizer_checkpoint(), checkpoint)
    parquet = corpus_of("multinews", "parquet", tmp_path / "parquet") / "test.parquet"
    split_folder = corpus_of("jsonl", "save_to_disk", tmp_path / "saved") / "test"
    for source in (parquet, split_folder):
        output = tmp_path / f"{source.name}.jsonl"
        summarize(compose_config("summarize", [f"checkpoint={checkpoint}", f"input={source}", f"output={output}",
                                               *device_overrides("summarize", device), "decode.beam_size=1",
                                               "decode.max_length=4", "decode.min_length=0"], tmp_path / "hydra"))
        ids = [json.loads(line)["id"] for line in output.read_text().splitlines()]
        assert ids == [r["id"] for r in native_records("test")]  # multinews detected by its columns


def test_a_mistyped_or_missing_column_is_one_line_naming_the_file_column_and_columns_found(tmp_path):
    rows = [{"id": "a", "document": ["a list", "not a string"], "summary": "s"}]
    corpus = write_corpus(tmp_path / "corpus", {"train": rows}, "parquet")
    with pytest.raises(ColumnError) as error:
        read_corpus_split(corpus, "train", "multinews")
    message = str(error.value)
    assert "\n" not in message and isinstance(error.value, UsageError)
    for text in (str(corpus / "train.parquet"), "column 'document'", "to be string", "found list<string>",
                 "columns: id: string, document: list<string>, summary: string"):
        assert text in message
    with pytest.raises(ColumnError, match=r"expected a column 'documents' .*found only the columns id: string, "
                                          r"document: list<string>, summary: string"):
        read_corpus_split(corpus, "train", "jsonl")
    without_summary = write_corpus(tmp_path / "no-summary", {"train": [{"document": "text"}]}, "save_to_disk")
    with pytest.raises(ColumnError, match="expected a column 'summary'"):  # a training split needs references
        read_corpus_split(without_summary, "train", "multinews")
    with pytest.raises(InputError, match="column 'document'") as error:  # summarize: at once, before any record
        read_records(corpus / "train.parquet", input_format="multinews")
    assert "\n" not in str(error.value)
    summaries_only = read_records(without_summary / "train", require_summary=False)
    assert [e.documents for e in summaries_only] == [[["text"]]]  # summarizing needs no reference


@pytest.mark.parametrize("layout", ["save_to_disk", "parquet"])
def test_a_file_cut_short_or_not_arrow_is_one_line(layout, tmp_path):
    corpus = corpus_of("multinews", layout, tmp_path / "corpus")
    path = corpus / ("train.parquet" if layout == "parquet" else "train/data-00001-of-00002.arrow")
    data = path.read_bytes()
    for cut in (data[: len(data) // 2], b"not a table"):
        path.write_bytes(cut)
        with pytest.raises(ColumnError) as error:
            read_corpus_split(corpus, "train", "multinews")
        assert str(error.value).startswith(f"{path}: expected ") and "\n" not in str(error.value)


def test_a_bad_row_is_a_record_error_naming_its_file_and_row(tmp_path):
    rows = [{"id": "a", "document": "text", "summary": "s"}, {"id": "b", "document": "", "summary": "s"},
            {"id": "a", "document": "again", "summary": "s"}]
    corpus = write_corpus(tmp_path / "corpus", {"train": rows}, "parquet")
    records = list(read_records(corpus / "train.parquet", input_format="multinews", require_summary=True))
    assert records[0].id == "a"
    path = str(corpus / "train.parquet")
    assert [(e.path, e.line, e.field_name) for e in records[1:]] == [(path, 2, "document"), (path, 3, "id")]


def test_a_save_to_disk_corpus_without_a_split(tmp_path):
    rows = {split: [as_format(r, "multinews") for r in native_records(split)] for split in ("train", "validation")}
    corpus = write_corpus(tmp_path / "corpus", rows, "save_to_disk")
    with pytest.raises(FileNotFoundError) as error:
        read_corpus_split(corpus, "test", "multinews")
    assert str(error.value) == (f"{corpus}: expected a split 'test' in this datasets save_to_disk folder, found only "
                                f"the splits train, validation (see docs/data.md)")
    with pytest.raises(InputError, match="expected the folder of one split as the input, e.g. one of"):
        read_records(corpus)


@pytest.mark.slow
def test_hiersum_prepare_without_the_test_split_or_with_a_wrong_column_exits_2_in_one_line(tmp_path, monkeypatch,
                                                                                          capsys):
    """``hiersum prepare``'s ``main`` in process (exit status and stderr; the console script as a process:
    tests/commands/test_prepare.py)."""
    rows = {split: [as_format(r, "multinews") for r in native_records(split)] for split in ("train", "validation")}
    corpus = write_corpus(tmp_path / "corpus", rows, "save_to_disk")
    result = run_in_process("hiersum", ["prepare", "data=multinews", f"data.path={corpus}", *DATA_OVERRIDES,
                                        f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch, capsys)
    assert_usage_error(result.returncode, result.stderr, "expected a split 'test'", "train, validation")
    renamed = {split: [{"text": r["document"], "summary": r["summary"]} for r in split_rows]
               for split, split_rows in rows.items()}
    corpus = write_corpus(tmp_path / "parquet", renamed, "parquet")
    result = run_in_process("hiersum", ["prepare", "data=multinews", f"data.path={corpus}", "splits=[train]",
                                        *DATA_OVERRIDES, f"hydra.run.dir={tmp_path / 'run2'}"], monkeypatch, capsys)
    assert_usage_error(result.returncode, result.stderr, f"{corpus / 'train.parquet'}: expected a column 'document' "
                       "(string), found only the columns text: string, summary: string")
