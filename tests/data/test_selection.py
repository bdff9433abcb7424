"""Paragraph selection strategies (hiersum.data.selection: tf-idf, the scorer interface, ranked order) and
the ranker's labels and batches (hiersum.data.ranker_data)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from rouge_score import rouge_scorer

from hiersum.config import DataConfig
from hiersum.data import ranker_data
from hiersum.data.corpus_splits import read_split
from hiersum.data.prepared import split_manifest
from hiersum.data.ranker_data import Rouge2Recall, collate_ranker, encode_ranker_examples, split_labels
from hiersum.data.schema import Example
from hiersum.data.selection import (
    SCORERS,
    TITLE_DOCUMENT,
    EncodingConfig,
    TfidfScorer,
    encode_examples,
    encoding_config,
    paragraph_scorer,
    ranked_order,
)
from hiersum.data.tokenizer import train_tokenizer


class WordTokenizer:
    """A stand-in tokenizer: one id per distinct word (enough for the selection, which never decodes)."""

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [[self.vocabulary.setdefault(word, len(self.vocabulary)) for word in text.split()] for text in texts]


FERRY = Example(
    id="ferry",
    title="ferry collision harbour",
    documents=[["the weather was mild on tuesday", "a ferry hit the harbour wall in the collision"],
               ["officials praised the harbour ferry crew after the collision", "markets closed higher"]],
    references=["a ferry collision damaged the harbour wall"],
)


def test_tfidf_ranks_the_paragraphs_about_the_title_first():
    scores = TfidfScorer().score([FERRY])[0]
    order = ranked_order(FERRY.documents, scores)
    assert set(order[:2]) == {(0, 1), (1, 0)}  # the two paragraphs that share the title's words
    assert scores[0] == scores[3] == 0.0  # no word in common with the title
    assert all(0.0 <= score <= 1.0 + 1e-9 for score in scores)


def test_tfidf_without_a_title_ranks_by_similarity_to_the_centroid():
    untitled = Example(id="u", title=None, references=["x"], documents=[
        ["storm floods the coastal town", "the storm floods roads in the town"],
        ["recipe for lemon cake", "coastal town storm damage and floods"]])
    order = ranked_order(untitled.documents, TfidfScorer().score([untitled])[0])
    assert order[-1] == (1, 0)  # the outlier paragraph is last


def test_ranked_order_keeps_document_order_on_ties_and_checks_the_score_count():
    documents = [["a", "b"], ["c"]]
    assert ranked_order(documents, [0.5, 0.5, 0.9]) == [(1, 0), (0, 0), (0, 1)]
    with pytest.raises(ValueError, match="2 scores for 3 paragraphs"):
        ranked_order(documents, [0.1, 0.2])


def test_encode_examples_with_tfidf_keeps_the_title_then_the_best_paragraphs_with_provenance():
    config = EncodingConfig(max_paragraphs=3, max_paragraph_tokens=50, max_target_tokens=8, selection="tfidf")
    tokenizer = WordTokenizer()
    (encoded,) = encode_examples([FERRY], tokenizer, config)
    assert encoded.provenance[0] == (TITLE_DOCUMENT, 0)
    assert set(encoded.provenance[1:]) == {(0, 1), (1, 0)}
    assert encoded.n_dropped_paragraphs == 2
    words = {i: w for w, i in tokenizer.vocabulary.items()}
    for (document, paragraph), ids in zip(encoded.provenance[1:], encoded.paragraphs[1:], strict=True):
        assert " ".join(words[i] for i in ids) == FERRY.documents[document][paragraph]


class ReversedScorer:
    """A scorer that prefers later paragraphs (a stand-in for a trained ranker)."""

    def score(self, examples):
        return [[float(i) for i in range(sum(len(d) for d in example.documents))] for example in examples]


def test_the_ranker_rule_reaches_a_registered_scorer_through_its_checkpoint_path(monkeypatch):
    seen = []
    monkeypatch.setitem(SCORERS, "ranker", lambda config: seen.append(config.ranker) or ReversedScorer())
    data = DataConfig(path="", selection="ranker", ranker="my-ranker.pt", max_paragraphs=2, title_paragraph=False)
    config = encoding_config(data)
    (encoded,) = encode_examples([FERRY], WordTokenizer(), config)
    assert seen == ["my-ranker.pt"] and encoded.provenance == [(1, 1), (1, 0)]


def test_the_ranker_rule_needs_a_checkpoint_and_a_registered_loader(monkeypatch):
    with pytest.raises(ValueError, match=r"data.selection=ranker needs data.ranker=PATH"):
        DataConfig(path="", selection="ranker")
    monkeypatch.delitem(SCORERS, "ranker", raising=False)
    with pytest.raises(ValueError, match="import hiersum.checkpoints.ranker"):
        paragraph_scorer(EncodingConfig(max_paragraphs=4, selection="ranker", ranker="x.pt"))
    # the ranker path counts only for selection=ranker
    assert encoding_config(DataConfig(path="", selection="tfidf", ranker="x.pt")).ranker is None


def test_prepared_key_includes_the_ranker_checkpoint_file(tiny_corpus, tmp_path):
    texts = [p for e in read_split(tiny_corpus / "train.jsonl") for d in e.documents for p in d]
    tokenizer = train_tokenizer(texts, vocab_size=300)
    checkpoint = tmp_path / "ranker.pt"
    checkpoint.write_bytes(b"v1")
    data = DataConfig(path=str(tiny_corpus), selection="ranker", ranker=str(checkpoint))
    first = split_manifest(data, "train", tokenizer)
    assert first["ranker"][0]["size"] == 2
    checkpoint.write_bytes(b"v2-longer")
    assert split_manifest(data, "train", tokenizer) != first  # a retrained ranker: another prepared folder
    assert "ranker" not in split_manifest(DataConfig(path=str(tiny_corpus), selection="tfidf"), "train", tokenizer)


def test_labels_are_rouge_score_rouge2_recall_against_the_best_reference():
    example = Example(id="x", title=None, documents=[["Ferries collided in the harbour today.", "Nothing here."]],
                      references=["The ferries collided in the harbour.", "Markets closed higher today."])
    scorer = rouge_scorer.RougeScorer(["rouge2"], use_stemmer=True)
    expected = [max(scorer.score(reference, paragraph)["rouge2"].recall for reference in example.references)
                for paragraph in example.documents[0]]
    labels = Rouge2Recall().labels(example)
    assert labels == pytest.approx(expected) and labels[0] > 0.5 and labels[1] == 0.0


def test_split_labels_are_computed_once_and_cached(tiny_corpus, tmp_path, monkeypatch):
    data = DataConfig(path=str(tiny_corpus), cache_dir=str(tmp_path))
    first = split_labels(data, "validation", WordTokenizer())
    assert len(first) == len(read_split(tiny_corpus / "validation.jsonl"))
    example, labels = first[0]
    assert len(labels) == sum(len(d) for d in example.documents) and max(labels) > 0

    def fail(self, example):
        raise AssertionError("labels recomputed")

    monkeypatch.setattr(ranker_data.Rouge2Recall, "labels", fail)
    assert split_labels(data, "validation", WordTokenizer()) == first
    (cached,) = tmp_path.glob("ranker-labels-*/labels.json")
    assert json.loads(cached.read_text()) == [labels for _, labels in first]


def test_ranker_batches_hold_every_paragraph_with_its_example_and_label(tiny_corpus: Path):
    examples = read_split(tiny_corpus / "train.jsonl")[:2]
    texts = [p for e in examples for d in e.documents for p in d]
    tokenizer = train_tokenizer(texts, vocab_size=200)
    labels = [[0.5] * sum(len(d) for d in e.documents) for e in examples]
    encoded = encode_ranker_examples(examples, tokenizer, max_tokens=5, labels=labels)
    batch = collate_ranker(encoded, pad=tokenizer.special.pad)
    n = sum(len(e.paragraphs) for e in encoded)
    assert batch.paragraphs.shape[0] == n and batch.paragraphs.shape[1] <= 5
    assert batch.paragraph_example.tolist() == [i for i, e in enumerate(encoded) for _ in e.paragraphs]
    assert torch.equal(batch.labels, torch.full((n,), 0.5))
    assert batch.has_title.tolist() == [e.title is not None for e in examples]
    assert (batch.paragraph_lengths >= 1).all() and (batch.paragraph_lengths <= 5).all()


def test_paragraph_features_are_length_tfidf_and_position_in_the_order_asked():
    from hiersum.data.ranker_data import paragraph_features

    example = Example(id="x", title=None, references=["r"],
                      documents=[["Ferries collided in the harbour.", "Nothing."], ["The harbour ferries collided."]])
    rows = torch.tensor(paragraph_features(example, ["position", "length", "tfidf"]))  # (3 paragraphs, 3)

    def standardized(values):  # over the example's paragraphs: mean 0, variance 1
        values = torch.tensor(values, dtype=torch.float)
        return (values - values.mean()) / values.std(unbiased=False)

    torch.testing.assert_close(rows[:, 0], standardized([1.0, 0.5, 1.0]))  # 1 / (1 + index in its document)
    torch.testing.assert_close(rows[:, 1], standardized([math.log(6), math.log(2), math.log(5)]))  # log(1 + words)
    torch.testing.assert_close(rows[:, 2], standardized(TfidfScorer.score_example(example)))
    assert rows[1, 2] < rows[0, 2]  # the off-topic paragraph is the least similar to the centroid
    assert paragraph_features(example, []) == [[], [], []]
    alone = Example(id="y", title=None, references=["r"], documents=[["Only one paragraph."]])
    assert paragraph_features(alone, ["length", "position"]) == [[0.0, 0.0]]


def test_ranker_batches_carry_the_features_of_every_paragraph(tiny_corpus: Path):
    from hiersum.data.ranker_data import paragraph_features

    examples = read_split(tiny_corpus / "train.jsonl")[:2]
    tokenizer = train_tokenizer([p for e in examples for d in e.documents for p in d], vocab_size=200)
    encoded = encode_ranker_examples(examples, tokenizer, max_tokens=5, features=["length", "position"])
    batch = collate_ranker(encoded, pad=tokenizer.special.pad)
    n = sum(len(e.paragraphs) for e in encoded)
    assert batch.features.shape == (n, 2)
    expected = [row for e in examples for row in paragraph_features(e, ["length", "position"])]
    torch.testing.assert_close(batch.features, torch.tensor(expected))
    plain = collate_ranker(encode_ranker_examples(examples, tokenizer, max_tokens=5), pad=tokenizer.special.pad)
    assert plain.features.shape == (n, 0)
    with pytest.raises(ValueError, match="different feature counts"):
        collate_ranker([encoded[0], encode_ranker_examples(examples[1:], tokenizer, max_tokens=5)[0]], pad=0)
