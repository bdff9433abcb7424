"""Readers of a data split by ``data.format``: native JSONL, Multi-News JSONL, SciTLDR JSONL.

``jsonl`` is :func:`hiersum.data.readers.iter_jsonl`; ``multinews`` is the Multi-News reader of
:mod:`hiersum.data.formats` (shared with ``hiersum-summarize``); ``scitldr`` is
:func:`hiersum.data.scitldr.iter_scitldr`. (``wikisum`` shards hold ids, not text, and are read by
:mod:`hiersum.data.wikisum`.) A split file is ``<data.path>/<split>.jsonl`` in every format.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from hiersum.data.formats import read_records
from hiersum.data.readers import iter_jsonl
from hiersum.data.schema import Example, RecordError
from hiersum.data.scitldr import iter_scitldr

TEXT_FORMATS = ("jsonl", "multinews", "scitldr")


def iter_split(path: str | Path, data_format: str) -> Iterator[Example | RecordError]:
    """Every record of the split file ``path`` in ``data_format`` (references required)."""
    if data_format == "jsonl":
        return iter_jsonl(path)
    if data_format == "multinews":
        return read_records(path, input_format="multinews", require_summary=True)
    if data_format == "scitldr":
        return iter_scitldr(path)
    raise ValueError(f"data.format={data_format!r} is not a text format: expected one of {', '.join(TEXT_FORMATS)}")


def read_split(path: str | Path, data_format: str = "jsonl") -> list[Example]:
    """The examples of a split file; the first malformed record raises its :class:`RecordError`."""
    examples = []
    for item in iter_split(path, data_format):
        if isinstance(item, RecordError):
            raise item
        examples.append(item)
    return examples
