"""The ranked WikiSum reader (hiersum.data.formats.wikisum): shards of paragraph and target ids."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from hiersum.config import DataConfig, ModelConfig
from hiersum.data.batching import SourceLayout
from hiersum.data.datamodule import SummarizationDataModule
from hiersum.data.formats.wikisum import load_shard, read_wikisum, shard_paths
from hiersum.data.schema import RecordError
from hiersum.data.selection import EncodingConfig


def write_shards(folder: Path) -> None:
    """Two train shards and a test shard in the release's format (paragraph and target ids)."""
    def record(k: int) -> dict:
        return {"src": [[20 + k, 21, 22], [23, 24], [25 + k]], "tgt": [4, 30 + k, 8, 31, 5], "tgt_str": f"summary {k}"}

    torch.save([record(0), record(1)], folder / "WIKI.train.0.pt")
    torch.save([record(2)], folder / "WIKI.train.1.pt")
    torch.save([record(3)], folder / "WIKI.test.0.pt")


class SpecialTokenizer:
    """Stands in for the SentencePiece tokenizer: official special ids, ids decoded as words."""

    class special:
        pad, bos, eos = 6, 4, 5

    paragraph_separator_id = 5  # as a vocabulary without a paragraph token: EOS
    tokens = ("<PAD>", "<S>", "</S>")

    def to_str(self):  # what a prepared corpus fingerprints
        return "special-tokenizer"

    def decode(self, ids):
        return " ".join(f"W{i}" for i in ids)


def test_wikisum_reader_keeps_ranked_paragraphs_and_strips_bos_eos(tmp_path):
    write_shards(tmp_path)
    torch.save([{"src": [[1]], "tgt": [4, 5]}], tmp_path / "WIKI.train.10.pt")
    names = [p.name for p in shard_paths(tmp_path, "train")]
    assert names == ["WIKI.train.0.pt", "WIKI.train.1.pt", "WIKI.train.10.pt"]  # by shard number
    config = EncodingConfig(max_paragraphs=2, max_paragraph_tokens=2, max_target_tokens=2, graph="similarity")
    examples, encoded = read_wikisum(tmp_path, "train", SpecialTokenizer(), config, with_text=True)
    assert [e.id for e in encoded] == ["WIKI.train.0-0", "WIKI.train.0-1", "WIKI.train.1-0", "WIKI.train.10-0"]
    first = encoded[1]
    assert first.paragraphs == [[21, 21], [23, 24]] and first.target == [31, 8]
    assert first.references == ["summary 1"] and first.provenance == [(0, 0), (0, 1)]
    assert first.n_dropped_paragraphs == 1 and len(first.graph) == 2 and first.graph[0][1] == 0.0
    assert examples[1].documents == [["W21 W21 W22", "W23 W24"]]  # whole paragraphs, for the lead baseline
    with pytest.raises(FileNotFoundError, match="WIKI.valid.N.pt"):
        shard_paths(tmp_path, "validation")


def test_wikisum_shard_errors_name_file_record_and_field(tmp_path):
    torch.save([{"src": [[1, 2], "text"], "tgt": [4, 5]}], tmp_path / "WIKI.test.0.pt")
    with pytest.raises(RecordError, match=r"WIKI.test.0.pt:0: field 'src\[1\]': expected a list of token ids"):
        load_shard(tmp_path / "WIKI.test.0.pt")


def test_datamodule_reads_wikisum_with_more_paragraphs_at_test(tmp_path):
    write_shards(tmp_path)
    data = DataConfig(path=str(tmp_path), format="wikisum", max_paragraphs=2, eval_max_paragraphs=3,
                      max_paragraph_tokens=8, max_target_tokens=8, title_paragraph=False, batch_tokens=64)
    flat = ModelConfig(encoder="flat", inter_layers=[], flat_max_tokens=5)
    datamodule = SummarizationDataModule(data, SpecialTokenizer(), model=flat, layout=SourceLayout.FLAT)
    assert [len(e.paragraphs) for e in datamodule.load_split("train")] == [2, 2, 2]
    assert [len(e.paragraphs) for e in datamodule.load_split("test")] == [3]
    assert datamodule.load_split("test").example(0).references == ["summary 3"]
    batch = next(iter(datamodule.loader("test", distributed=False)))
    assert batch.src.tolist() == [[23, 21, 22, 5, 23, 5]]  # paragraphs joined with EOS (no <P> token), cut, EOS


