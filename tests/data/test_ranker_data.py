"""The ranker's data read through the paragraph rule: its labels and training examples are the paragraphs encoding
ranks (``selection=ranker paragraphs=sentences``), and the labels' cache key holds the rule."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from hiersum.config import DataConfig, RankerModelConfig
from hiersum.data import selection as selection_module
from hiersum.data.corpus_splits import read_text_split
from hiersum.data.prepared import tokenizer_digest
from hiersum.data.ranker_data import labels_key, split_labels
from hiersum.data.schema import Example
from hiersum.data.selection import encode_examples, encoding_config
from hiersum.data.tokenizer import SubwordTokenizer, train_tokenizer
from hiersum.training.ranker import ranker_examples


class RecordingScorer:
    """A ranker stand-in that keeps the examples encoding hands it (their paragraphs are what it ranks)."""

    def __init__(self) -> None:
        self.examples: list[Example] = []

    def score(self, examples: Sequence[Example]) -> list[list[float]]:
        self.examples += examples
        return [[0.0] * sum(map(len, example.documents)) for example in examples]


@pytest.fixture(scope="module")
def tokenizer(tiny_corpus: Path) -> SubwordTokenizer:
    examples, _ = read_text_split(DataConfig(path=str(tiny_corpus)), "train")
    return train_tokenizer([p for example in examples for document in example.documents for p in document],
                           vocab_size=300)


def sentences_data(corpus: Path, cache: Path) -> DataConfig:
    return DataConfig(path=str(corpus), cache_dir=str(cache), paragraphs="sentences", max_paragraph_tokens=16,
                      selection="ranker", ranker=str(cache / "ranker.pt"))


def test_the_ranker_is_labelled_and_trained_on_the_paragraphs_encoding_ranks(
        tiny_corpus: Path, tmp_path: Path, tokenizer: SubwordTokenizer, monkeypatch: pytest.MonkeyPatch) -> None:
    data = sentences_data(tiny_corpus, tmp_path)
    ranker = RecordingScorer()
    monkeypatch.setattr(selection_module, "paragraph_scorer", lambda config: ranker)
    raw, _ = read_text_split(data, "validation")
    encode_examples(raw, tokenizer, encoding_config(data, evaluation=True))
    ranked = [example.documents for example in ranker.examples]
    assert ranked != [example.documents for example in raw]  # the rule made other paragraphs than the given ones

    labelled = split_labels(data, "validation", tokenizer)
    assert [example.documents for example, _ in labelled] == ranked
    assert [len(labels) for _, labels in labelled] == [sum(map(len, documents)) for documents in ranked]

    model = RankerModelConfig(max_paragraph_tokens=64)
    trained = ranker_examples(data, "validation", tokenizer, model, max_paragraphs=None)
    expected = [[ids[: model.max_paragraph_tokens] for ids in
                 tokenizer.encode_batch([p for document in documents for p in document])] for documents in ranked]
    assert [example.paragraphs for example in trained] == expected


def test_the_labels_key_holds_the_rule_under_sentences_and_is_unchanged_under_given(
        tiny_corpus: Path, tmp_path: Path, tokenizer: SubwordTokenizer) -> None:
    given = DataConfig(path=str(tiny_corpus), cache_dir=str(tmp_path))
    key = labels_key(given, "validation", tokenizer)
    assert set(key) == {"version", "format", "split", "inputs"}  # the key of the labels cached before the rule
    sentences = labels_key(sentences_data(tiny_corpus, tmp_path), "validation", tokenizer)
    assert sentences == {**key, "paragraphs": "sentences", "max_paragraph_tokens": 16, "long_sentences": "split",
                         "tokenizer": tokenizer_digest(tokenizer)}
    split_labels(given, "validation", tokenizer)
    split_labels(sentences_data(tiny_corpus, tmp_path), "validation", tokenizer)
    folders = sorted(tmp_path.glob("ranker-labels-*/key.json"))
    assert len(folders) == 2  # each rule its own labels
    assert sorted(json.loads(folder.read_text())["split"] for folder in folders) == ["validation", "validation"]
