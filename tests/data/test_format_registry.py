"""The data format registry: a new format is one ``register_format`` call plus one ``conf/data`` YAML."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from hiersum.config import DataConfig
from hiersum.data.corpus_splits import read_corpus_split
from hiersum.data.datamodule import SummarizationDataModule
from hiersum.data.formats import InputError, input_formats, read_records
from hiersum.data.formats.registry import (
    FORMATS,
    FormatSpec,
    format_spec,
    register_format,
    text_format,
    unregister_format,
    validate_format,
)
from hiersum.data.schema import Example, RecordError
from hiersum.data.tokenizer import train_tokenizer

TSV_YAML = """\
# A toy format for tests: one example a line, ``title<TAB>paragraph|paragraph<TAB>summary``.
defaults:
  - schema
format: tsv
path: ???
"""


def parse_tsv(text: str, *, path: str, line: int, require_summary: bool = True) -> Example:
    fields = text.rstrip("\n").split("\t")
    if len(fields) != 3:
        raise RecordError(path, line, None, f"expected 3 tab-separated fields, found {len(fields)}")
    title, paragraphs, summary = fields
    if require_summary and not summary.strip():
        raise RecordError(path, line, "summary", "expected a reference summary, found none")
    return Example(id=f"{Path(path).stem}-{line}", title=title, documents=[paragraphs.split("|")],
                   references=[summary] if summary.strip() else [])


@pytest.fixture()
def tsv_format(tmp_path: Path) -> Path:
    """``data.format=tsv`` registered, and ``data=tsv`` in a config folder on Hydra's search path."""
    register_format("tsv", FormatSpec("toy TSV", parse_line=parse_tsv, suffix=".tsv"))
    conf = tmp_path / "plugin_conf"
    (conf / "data").mkdir(parents=True)
    (conf / "data" / "tsv.yaml").write_text(TSV_YAML, encoding="utf-8")
    yield conf
    unregister_format("tsv")


@pytest.fixture()
def tsv_corpus(tiny_corpus: Path, tmp_path: Path) -> Path:
    """The tiny native corpus rewritten as ``{train,validation,test}.tsv``."""
    folder = tmp_path / "tsv"
    folder.mkdir()
    for split in ("train", "validation", "test"):
        lines = []
        for example in read_corpus_split(tiny_corpus, split):
            paragraphs = "|".join(p for document in example.documents for p in document)
            lines.append(f"{example.title}\t{paragraphs}\t{example.references[0]}\n")
        (folder / f"{split}.tsv").write_text("".join(lines), encoding="utf-8")
    return folder


def scitldr_corpus(folder: Path) -> Path:
    """SciTLDR splits ``{train,dev,test}.jsonl`` (no ``validation.jsonl``), ids telling the split."""
    folder.mkdir(parents=True)
    sentences = ["We study attention over paragraphs.", "It helps summarization.", "Results improve."]
    for split, n in (("train", 12), ("dev", 3), ("test", 3)):
        records = [{"paper_id": f"{split}-{i}", "title": f"Paper {i}", "source": sentences[i % 3:] + sentences,
                    "target": ["Attention over paragraphs helps.", "Paragraph attention works."]} for i in range(n)]
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return folder


def test_builtin_formats_declare_readers_ids_and_split_files():
    assert {"jsonl", "multinews", "scitldr", "wikisum"} <= set(FORMATS)
    assert [name for name, spec in FORMATS.items() if spec.token_ids] == ["wikisum"]
    assert format_spec("scitldr").split_file("validation") == "dev.jsonl"
    assert format_spec("scitldr").split_file("dev") == "dev.jsonl"
    assert format_spec("jsonl").split_file("validation") == "validation.jsonl"
    assert {"auto", "text", "native", "jsonl", "multinews", "scitldr", "line_pairs"} <= set(input_formats())
    assert "wikisum" not in input_formats()
    with pytest.raises(ValueError, match="'wikisum' is not a text format"):
        text_format("wikisum")


def test_unknown_format_is_refused_in_one_line_listing_the_registered_ones(tiny_cfg):
    message = (r"^data.format: unknown format 'csv'; registered formats: aeslc, cnndm, jsonl, line_pairs, multinews, "
               r"scitldr, wikisum \(see docs/data.md\)$")
    with pytest.raises(ValueError, match=message):
        validate_format(DataConfig(path="x", format="csv"))
    with pytest.raises(ValueError, match=message):
        SummarizationDataModule(DataConfig(path="x", format="csv"), train_tokenizer(["a b"] * 4, vocab_size=40))
    from hiersum.commands.train import train

    cfg = tiny_cfg("data.format=csv", "data.path=/nowhere")
    with pytest.raises(ValueError, match=message):
        train(cfg)
    with pytest.raises(ValueError, match="already registered"):
        register_format("jsonl", format_spec("jsonl"))
    with pytest.raises(ValueError, match="parse_line, read_split and/or read_files"):
        FormatSpec("neither")
    with pytest.raises(ValueError, match="a format that gives read_files gives split_inputs"):
        FormatSpec("files without their list", read_files=lambda files: [])


def test_scitldr_validates_on_its_dev_split(tiny_cfg, tmp_path):
    folder = scitldr_corpus(tmp_path / "scitldr")
    assert format_spec("scitldr").split_path(folder, "validation") == folder / "dev.jsonl"
    with pytest.raises(FileNotFoundError, match="validation.jsonl"):
        format_spec("jsonl").split_path(folder, "validation")  # the jsonl format has no dev split
    cfg = tiny_cfg("data=scitldr", f"data.path={folder}")
    data = OmegaConf.to_object(cfg.data)
    tokenizer = train_tokenizer([" ".join(["Attention over paragraphs helps summarization."] * 3)] * 8, vocab_size=60)
    datamodule = SummarizationDataModule(data, tokenizer)
    datamodule.setup("fit")
    assert [e.id for e in datamodule.load_split("validation")] == ["dev-0", "dev-1", "dev-2"]
    train = datamodule.load_split("train")  # data=scitldr trains on every reference: 12 papers x 2 TLDRs
    assert [train[i].id for i in range(4)] == ["train-0", "train-0#2", "train-1", "train-1#2"] and len(train) == 24
    assert datamodule.load_split("validation").example(0).references == ["Attention over paragraphs helps.",
                                                                         "Paragraph attention works."]


def test_a_registered_format_reads_splits_and_summarize_inputs(tsv_format, tmp_path):
    path = tmp_path / "in.tsv"
    path.write_text("T\tfirst para|second para\tthe summary\nbad line\n", encoding="utf-8")
    examples = list(read_records(path, input_format="tsv"))
    assert examples[0] == Example(id="in-1", title="T", documents=[["first para", "second para"]],
                                  references=["the summary"])
    assert isinstance(examples[1], RecordError) and examples[1].line == 2
    assert "tsv" in input_formats()
    with pytest.raises(RecordError, match="in.tsv:2"):
        read_corpus_split(tmp_path, "in", "tsv")
    unregister_format("tsv")
    with pytest.raises(InputError, match="input_format must be one of"):
        read_records(path, input_format="tsv")


def test_a_registered_format_trains_with_one_yaml(tsv_format, tsv_corpus, tiny_cfg, tmp_path):
    from hiersum.commands.train import train

    cfg = tiny_cfg("data=tsv", f"hydra.searchpath=[file://{tsv_format}]", "debug=fast_dev_run",
                   f"data.path={tsv_corpus}", "callbacks=none", "data.limit_eval_examples=2")
    assert cfg.data.format == "tsv"
    torch.manual_seed(0)
    metrics = train(cfg)
    assert math.isfinite(metrics["validation_loss"])
    assert metrics["n_examples"] == 2 and metrics["test"]["model"]["perplexity"] > 1.0
    assert (tmp_path / "run" / "tokenizer").exists()  # trained on train.tsv
