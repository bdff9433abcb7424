"""The data of the paragraph ranker (Liu & Lapata 2019, section 3.1): ROUGE-2 recall labels, encoded
examples and their batches.

A paragraph's label is its ROUGE-2 recall against the reference (the best-matching one when an example
has several), computed as rouge-score computes it (its tokenizer, Porter stemming on): the ranker learns
to predict how much of the summary's bigrams a paragraph holds. Labels of a split are computed once and
cached beside the prepared corpora (:func:`split_labels`). The paragraphs labelled, and those the ranker is trained
on, are those encoding ranks: made by the paragraph rule (:mod:`hiersum.data.paragraphs`).

Dimension letters: E examples in a batch, N paragraphs in the batch (all examples), T tokens per
paragraph, Q tokens of a title.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from hiersum.config import DataConfig, Paragraphs
from hiersum.data.corpus_splits import corpus_selection, paragraphed_split
from hiersum.data.formats.registry import format_spec
from hiersum.data.paragraphs import paragraph_rule_key
from hiersum.data.prepared import (
    cached_text,
    file_fingerprints,
    key_digest,
    layout_key,
    prepared_root,
    tokenizer_digest,
)
from hiersum.data.schema import Example
from hiersum.data.selection import TfidfScorer, words
from hiersum.data.tokenizer import SubwordTokenizer

LABELS_VERSION = 1
"""Version of the cached labels (part of their key)."""


def _bigrams(tokens: Sequence[str]) -> Counter[tuple[str, str]]:
    return Counter(zip(tokens, tokens[1:], strict=False))


class Rouge2Recall:
    """ROUGE-2 recall of texts against references, equal to ``RougeScorer(["rouge2"], use_stemmer=True)``'s
    recall, with each reference tokenized once (a cluster has tens to hundreds of paragraphs)."""

    def __init__(self) -> None:
        # imported here: rouge-score imports nltk, whose package imports scipy (1-2 s), which a command that labels
        # no paragraphs (summarize, rank) never needs
        from rouge_score.tokenizers import DefaultTokenizer

        self.tokenizer = DefaultTokenizer(use_stemmer=True)

    def bigrams(self, text: str) -> Counter[tuple[str, str]]:
        return _bigrams(self.tokenizer.tokenize(text))

    def score(self, examples: Sequence[Example]) -> list[list[float]]:
        """The labels of each example: this is a :class:`hiersum.data.selection.ParagraphScorer` (the oracle of
        selection evaluation)."""
        return [self.labels(example) for example in examples]

    def labels(self, example: Example) -> list[float]:
        """ROUGE-2 recall of each paragraph (document order) against its best-matching reference."""
        references = [self.bigrams(reference) for reference in example.references]
        labels = []
        for document in example.documents:
            for paragraph in document:
                bigrams = self.bigrams(paragraph)
                labels.append(max((sum((bigrams & reference).values()) / max(sum(reference.values()), 1)
                                   for reference in references), default=0.0))
        return labels


def labels_key(config: DataConfig, split: str, tokenizer: SubwordTokenizer) -> dict[str, Any]:
    """What the labels of ``split`` depend on: the input files (path, size, mtime), the format and the paragraph rule
    (:func:`hiersum.data.paragraphs.paragraph_rule_key`; under ``sentences`` also the tokenizer, which counts its
    tokens). Under ``given`` without normalization the key is what it was before the rule was in it, so the labels
    cached then stay valid."""
    spec = format_spec(config.format)
    selection = corpus_selection(config)
    rule = paragraph_rule_key(selection)
    if selection.paragraphs is Paragraphs.sentences:
        rule["tokenizer"] = tokenizer_digest(tokenizer)
    return {"version": LABELS_VERSION, "format": config.format, **layout_key(config), "split": split,
            "inputs": file_fingerprints(spec.input_files(config.path, split)), **rule}


def split_labels(config: DataConfig, split: str, tokenizer: SubwordTokenizer) -> list[tuple[Example, list[float]]]:
    """The examples of ``split``, their paragraphs those encoding ranks (:func:`hiersum.data.corpus_splits.
    paragraphed_split`: the paragraph rule, ``tokenizer`` counting its tokens), with their paragraph labels
    (:meth:`Rouge2Recall.labels`), computed once and kept in ``<prepared root>/ranker-labels-<corpus>-<split>-<key>``
    (:func:`labels_key`). A malformed record raises its :class:`RecordError` (``data.on_error=fail``) or is left out
    (``skip``)."""
    key = labels_key(config, split, tokenizer)
    corpus = Path(config.path).resolve().name or "corpus"
    folder = prepared_root(config) / f"ranker-labels-{corpus}-{split}-{key_digest(key)}"
    examples = paragraphed_split(config, split, tokenizer)

    def label() -> str:
        scorer = Rouge2Recall()
        return json.dumps([scorer.labels(example) for example in examples])

    path = cached_text(folder, "labels.json", key, label)
    labels = json.loads(path.read_text(encoding="utf-8"))
    if len(labels) != len(examples):
        raise ValueError(f"{folder}: {len(labels)} cached label lists for {len(examples)} examples; remove the folder")
    return list(zip(examples, labels, strict=True))


def _standardized(values: list[float]) -> list[float]:
    """``values`` shifted and scaled to mean 0 and variance 1 (all equal: zeros)."""
    mean = sum(values) / len(values)
    deviation = math.sqrt(sum((value - mean) ** 2 for value in values) / len(values))
    return [(value - mean) / deviation if deviation > 1e-9 else 0.0 for value in values]


def paragraph_features(example: Example, names: Sequence[str]) -> list[list[float]]:
    """The features ``names`` (of :class:`hiersum.config.RankerFeature`) of each paragraph of ``example``,
    document order, each standardized over the example's paragraphs (mean 0, variance 1: a ranking compares
    the paragraphs of one example): ``length`` = log(1 + words), ``tfidf`` = the :class:`TfidfScorer` score
    (cosine to the title or the centroid), ``position`` = 1 / (1 + index of the paragraph in its document)."""
    columns = []
    for name in names:
        if name == "length":
            columns.append([math.log1p(len(words(p))) for document in example.documents for p in document])
        elif name == "tfidf":
            columns.append(TfidfScorer.score_example(example))
        elif name == "position":
            columns.append([1.0 / (1 + index) for document in example.documents for index in range(len(document))])
        else:
            raise ValueError(f"unknown ranker feature {name!r}")
    count = sum(len(document) for document in example.documents)
    if not columns or not count:
        return [[] for _ in range(count)]
    return [list(row) for row in zip(*map(_standardized, columns), strict=True)]


@dataclass(frozen=True)
class RankerExample:
    """One example as the ranker reads it: token ids of the title (None: none) and of each paragraph in
    document order, the paragraphs' labels (empty when only scoring) and their features (one list per
    paragraph, as many values as ``RankerModelConfig.features`` names; empty: no feature)."""

    title: list[int] | None
    paragraphs: list[list[int]]
    labels: list[float]
    features: list[list[float]] = field(default_factory=list)

    def first(self, count: int) -> RankerExample:
        """The example cut to its first ``count`` paragraphs."""
        return RankerExample(self.title, self.paragraphs[:count], self.labels[:count], self.features[:count])


def encode_ranker_examples(
    examples: Sequence[Example], tokenizer: SubwordTokenizer, *, max_tokens: int, max_title_tokens: int = 32,
    labels: Sequence[Sequence[float]] | None = None, features: Sequence[str] = (),
) -> list[RankerExample]:
    """Tokenize the title and paragraphs of each example, paragraphs cut to ``max_tokens`` ids and the title
    to ``max_title_tokens`` (an empty text: one padding id, so every row has a token), and compute the
    paragraph ``features`` (:func:`paragraph_features`)."""
    encoded = []
    for index, example in enumerate(examples):
        texts = [paragraph for document in example.documents for paragraph in document]
        ids = tokenizer.encode_batch(texts + ([example.title] if example.title else []))
        title = (ids.pop()[:max_title_tokens] or [tokenizer.special.pad]) if example.title else None
        ids = [row[:max_tokens] or [tokenizer.special.pad] for row in ids]
        encoded.append(RankerExample(title, ids, list(labels[index]) if labels is not None else [],
                                     paragraph_features(example, features) if features else []))
    return encoded


@dataclass
class RankerBatch:
    """Examples of the ranker in tensors (every paragraph of every example in one [N, T] grid).

    ``paragraphs`` [N, T] ids (padding id after the end), ``paragraph_lengths`` [N] real tokens,
    ``paragraph_example`` [N] the example (0..E-1) of each paragraph, ``titles`` [E, Q] ids (a titleless
    example: one padding id), ``title_lengths`` [E], ``has_title`` [E] bool, ``features`` [N, F] float
    (F = 0 without features), ``labels`` [N] (zeros when only scoring)."""

    paragraphs: torch.Tensor
    paragraph_lengths: torch.Tensor
    paragraph_example: torch.Tensor
    titles: torch.Tensor
    title_lengths: torch.Tensor
    has_title: torch.Tensor
    features: torch.Tensor
    labels: torch.Tensor

    def to(self, device: torch.device | str) -> RankerBatch:
        return RankerBatch(**{name: value.to(device) for name, value in vars(self).items()})

    def inputs(self) -> dict[str, torch.Tensor]:
        """The keyword arguments of ``ParagraphRanker.forward`` (everything but the labels)."""
        return {name: value for name, value in vars(self).items() if name != "labels"}

    @property
    def n_examples(self) -> int:
        return int(self.titles.shape[0])


def _grid(rows: Sequence[Sequence[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max((len(row) for row in rows), default=1)
    grid = torch.full((len(rows), width), pad, dtype=torch.long)
    for index, row in enumerate(rows):
        grid[index, : len(row)] = torch.tensor(row, dtype=torch.long)
    return grid, torch.tensor([len(row) for row in rows], dtype=torch.long)


def collate_ranker(examples: Sequence[RankerExample], *, pad: int) -> RankerBatch:
    """One :class:`RankerBatch` of ``examples`` (each with at least one paragraph)."""
    rows = [paragraph for example in examples for paragraph in example.paragraphs]
    paragraphs, paragraph_lengths = _grid(rows, pad)
    titles, title_lengths = _grid([example.title or [pad] for example in examples], pad)
    owner = [index for index, example in enumerate(examples) for _ in example.paragraphs]
    labels = [label for example in examples for label in (example.labels or [0.0] * len(example.paragraphs))]
    features = [row for example in examples for row in (example.features or [[] for _ in example.paragraphs])]
    widths = {len(row) for row in features}
    if len(widths) > 1:
        raise ValueError(f"ranker examples with different feature counts in one batch: {sorted(widths)}")
    return RankerBatch(
        paragraphs=paragraphs,
        paragraph_lengths=paragraph_lengths,
        paragraph_example=torch.tensor(owner, dtype=torch.long),
        titles=titles,
        title_lengths=title_lengths,
        has_title=torch.tensor([example.title is not None for example in examples]),
        features=torch.tensor(features, dtype=torch.float).view(len(rows), widths.pop() if widths else 0),
        labels=torch.tensor(labels, dtype=torch.float),
    )
