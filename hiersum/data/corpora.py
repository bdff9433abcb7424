"""Readers of a data split by ``data.format``, through the format registry (:mod:`hiersum.data.formats.registry`).

``jsonl`` is :func:`hiersum.data.formats.native.iter_jsonl`; ``multinews`` is the Multi-News line parser of
:mod:`hiersum.data.formats.multinews` (shared with ``hiersum-summarize``); ``scitldr`` is
:func:`hiersum.data.formats.scitldr.iter_scitldr`. (``wikisum`` shards hold ids, not text, and are read by
:mod:`hiersum.data.formats.wikisum`.) A split file is ``<data.path>/<split file>`` of the format:
``<split>.jsonl``, except SciTLDR's validation split ``dev.jsonl``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from hiersum.data.formats.registry import text_format
from hiersum.data.schema import Example, RecordError


def iter_split(path: str | Path, data_format: str) -> Iterator[Example | RecordError]:
    """Every record of the split file ``path`` in ``data_format`` (references required)."""
    return text_format(data_format).iter_split(path)


def read_split(path: str | Path, data_format: str = "jsonl") -> list[Example]:
    """The examples of a split file; the first malformed record raises its :class:`RecordError`."""
    examples = []
    for item in iter_split(path, data_format):
        if isinstance(item, RecordError):
            raise item
        examples.append(item)
    return examples


def read_corpus_split(data_dir: str | Path, split: str, data_format: str = "jsonl") -> list[Example]:
    """The examples of ``split`` (train / validation / test, or a file stem such as ``dev``) of the
    corpus folder ``data_dir`` in ``data_format``; a missing split file raises FileNotFoundError."""
    return read_split(text_format(data_format).split_path(data_dir, split), data_format)
