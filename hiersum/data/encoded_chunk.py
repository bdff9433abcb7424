"""A chunk of encoded examples in the layout of a prepared shard's files (:mod:`hiersum.data.prepared`): the token
ids as flat arrays with the length of each paragraph and target, and each example's line of ``records.jsonl``
already serialized.

The tokenizing processes of ``hiersum prepare`` hand their work back in this form: arrays and bytes pickle and
unpickle as copies of memory, where :class:`~hiersum.data.schema.EncodedExample` objects, lists of int objects,
are rebuilt one int at a time by the writing process (docs/benchmarks.md, "Preparing a large corpus").
"""

from __future__ import annotations

import importlib
import itertools
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hiersum.data.schema import EncodedExample, Example
from hiersum.data.selection import SCORERS, EncodingConfig, encode_examples
from hiersum.data.tokenizer import SubwordTokenizer

TOKEN_DTYPE = np.int32
"""The dtype of token ids (and of the rows of ``lengths.bin``) in the prepared files."""
OFFSET_DTYPE = np.int64
"""The dtype of the offsets in the prepared files."""


@dataclass(frozen=True)
class EncodedChunk:
    """N examples with Q paragraphs in all."""

    paragraph_tokens: np.ndarray
    """int32 [sum of ``paragraph_lengths``]: every kept paragraph's ids, one after the other."""
    paragraph_lengths: np.ndarray
    """int64 [Q]: the ids of each paragraph."""
    example_paragraphs: np.ndarray
    """int64 [N]: the paragraphs of each example."""
    target_tokens: np.ndarray
    """int32 [sum of ``target_lengths``]: every target's ids."""
    target_lengths: np.ndarray
    """int64 [N]: the ids of each target."""
    lengths: np.ndarray
    """int32 [N, 3]: per example its paragraphs, its longest paragraph's ids and its target's ids (the rows of
    the split's ``lengths.bin``)."""
    record_lines: list[bytes]
    """[N]: each example's line of ``records.jsonl`` (UTF-8 JSON, newline-terminated)."""

    def __len__(self) -> int:
        return len(self.record_lines)

    def part(self, start: int, stop: int) -> EncodedChunk:
        """Examples ``start`` to ``stop`` (exclusive), as a chunk of their own."""
        first, last = (int(self.example_paragraphs[:index].sum()) for index in (start, stop))
        tokens = [int(self.paragraph_lengths[:index].sum()) for index in (first, last)]
        targets = [int(self.target_lengths[:index].sum()) for index in (start, stop)]
        return EncodedChunk(
            paragraph_tokens=self.paragraph_tokens[tokens[0]:tokens[1]],
            paragraph_lengths=self.paragraph_lengths[first:last],
            example_paragraphs=self.example_paragraphs[start:stop],
            target_tokens=self.target_tokens[targets[0]:targets[1]],
            target_lengths=self.target_lengths[start:stop],
            lengths=self.lengths[start:stop],
            record_lines=self.record_lines[start:stop],
        )


def record_line(example: Example, encoded: EncodedExample, *, with_text: bool) -> bytes:
    """The example's line of ``records.jsonl``: what the batches need beside the ids (and its text, ``with_text``)."""
    record: dict[str, Any] = {"id": encoded.id, "references": encoded.references, "provenance": encoded.provenance,
                              "n_dropped_paragraphs": encoded.n_dropped_paragraphs}
    if encoded.graph is not None:
        record["graph"] = encoded.graph.tolist()
    if encoded.oov_words:
        record["oov_words"] = encoded.oov_words
    if encoded.target_truncated:
        record["target_truncated"] = True
    if with_text:
        record.update(title=example.title, documents=example.documents)
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def _ids(lists: list[list[int]], total: int) -> np.ndarray:
    return np.fromiter(itertools.chain.from_iterable(lists), dtype=TOKEN_DTYPE, count=total)


def encoded_chunk(pairs: Iterable[tuple[Example, EncodedExample]], *, with_text: bool) -> EncodedChunk:
    """The chunk of ``pairs`` (each example with its encoding), in their order."""
    pairs = list(pairs)
    encoded = [pair[1] for pair in pairs]
    paragraphs = [paragraph for example in encoded for paragraph in example.paragraphs]
    paragraph_lengths = np.fromiter(map(len, paragraphs), dtype=OFFSET_DTYPE, count=len(paragraphs))
    targets = [example.target for example in encoded]
    target_lengths = np.fromiter(map(len, targets), dtype=OFFSET_DTYPE, count=len(targets))
    example_paragraphs = np.fromiter((len(example.paragraphs) for example in encoded), dtype=OFFSET_DTYPE,
                                     count=len(encoded))
    longest = [max(map(len, example.paragraphs), default=0) for example in encoded]
    lengths = np.stack([example_paragraphs, np.asarray(longest, dtype=OFFSET_DTYPE), target_lengths], axis=1)
    return EncodedChunk(
        paragraph_tokens=_ids(paragraphs, int(paragraph_lengths.sum())),
        paragraph_lengths=paragraph_lengths,
        example_paragraphs=example_paragraphs,
        target_tokens=_ids(targets, int(target_lengths.sum())),
        target_lengths=target_lengths,
        lengths=lengths.astype(TOKEN_DTYPE),
        record_lines=[record_line(example, one, with_text=with_text) for example, one in pairs],
    )


def encode_chunk(examples: list[Example], tokenizer: SubwordTokenizer, selection: EncodingConfig,
                 with_text: bool) -> EncodedChunk:
    """``examples`` selected, tokenized (:func:`~hiersum.data.selection.encode_examples`) and made a chunk."""
    return encoded_chunk(zip(examples, encode_examples(examples, tokenizer, selection), strict=True),
                         with_text=with_text)


# The tokenizing processes of hiersum prepare run the two functions below. They live here, not in
# hiersum.data.prepared, so that a spawned process imports neither torch nor the rest of the prepared corpora.

EncodingSettings = tuple[SubwordTokenizer, EncodingConfig, bool]
"""What a tokenizing process encodes with: the tokenizer, the selection and ``with_text`` (the arguments of
:func:`encode_chunk` after the examples)."""

_SETTINGS: list[EncodingSettings] = []
"""The encoding settings of this tokenizing process, set once when it starts."""


def scorer_module(selection: EncodingConfig) -> str | None:
    """The module that registered the paragraph scorer of ``selection.selection`` in
    :data:`~hiersum.data.selection.SCORERS` (``hiersum.checkpoints.ranker`` for ``ranker``); None for a rule without
    one. A spawned process starts with no such import, so :func:`init_tokenizing_process` makes it."""
    entry = SCORERS.get(selection.selection)
    return entry.__module__ if entry is not None else None


def init_tokenizing_process(settings: EncodingSettings, module: str | None = None) -> None:
    """The initializer of a tokenizing process; ``module``: :func:`scorer_module` of the settings' selection, imported
    so that this process's scorer registry holds what the parent's does."""
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one thread a process: the processes already use the cores
    if module is not None:
        importlib.import_module(module)
    _SETTINGS.append(settings)


def encode_in_process(examples: list[Example]) -> EncodedChunk:
    """:func:`encode_chunk` with the settings this process started with."""
    return encode_chunk(examples, *_SETTINGS[-1])
