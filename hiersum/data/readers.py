"""Readers of the native JSONL format, with validation that names file, line and field.

Native JSONL, one example a line::

    {"id": "optional", "title": "optional topic",
     "documents": ["a document; paragraphs separated by blank lines", "another"],
     "summary": "reference text, or a list of references"}

``documents`` may also be a list of lists of paragraph strings (pre-split).
``summary`` is optional where only summarizing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from hiersum.data.schema import Example, RecordError

RecordParser = Callable[..., Example]
"""``parse(text, *, path, line, require_summary) -> Example``, raising :class:`RecordError`."""

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def split_paragraphs(document: str) -> list[str]:
    """Split a document on blank lines; collapse inner whitespace; drop empty paragraphs."""
    paragraphs = (" ".join(p.split()) for p in _PARAGRAPH_BREAK.split(document))
    return [p for p in paragraphs if p]


def _parse_documents(value: Any, path: str, line: int) -> list[list[str]]:
    if not isinstance(value, list) or not value:
        found = type(value).__name__ if not isinstance(value, list) else "an empty list"
        raise RecordError(path, line, "documents", f"expected a non-empty list of documents, found {found}")
    documents = []
    for index, document in enumerate(value):
        if isinstance(document, str):
            paragraphs = split_paragraphs(document)
        elif isinstance(document, list) and all(isinstance(p, str) for p in document):
            paragraphs = [" ".join(p.split()) for p in document if p.strip()]
        else:
            raise RecordError(
                path, line, f"documents[{index}]",
                f"expected a string or a list of paragraph strings, found {type(document).__name__}",
            )
        if paragraphs:
            documents.append(paragraphs)
    if not documents:
        raise RecordError(path, line, "documents", "expected some text, found only empty documents")
    return documents


def _parse_references(value: Any, path: str, line: int, require: bool) -> list[str]:
    if value is None:
        if require:
            raise RecordError(path, line, "summary", "expected a reference summary, found none")
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
        found = type(value).__name__
        raise RecordError(path, line, "summary", f"expected a string or a list of strings, found {found}")
    references = [r.strip() for r in value if r.strip()]
    if require and not references:
        raise RecordError(path, line, "summary", "expected a non-empty reference summary, found an empty one")
    return references


def load_json_object(text: str, *, path: str, line: int) -> dict[str, Any]:
    """The JSON object on one line, or a :class:`RecordError` saying what was found instead."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise RecordError(path, line, None, f"expected a JSON object, found invalid JSON ({error.msg})") from None
    if not isinstance(record, dict):
        raise RecordError(path, line, None, f"expected a JSON object, found {type(record).__name__}")
    return record


def parse_record(text: str, *, path: str, line: int, require_summary: bool) -> Example:
    """Parse and validate one JSONL line into an :class:`Example`."""
    record = load_json_object(text, path=path, line=line)
    record_id = record.get("id", f"{Path(path).stem}-{line}")
    if not isinstance(record_id, (str, int)):
        raise RecordError(path, line, "id", f"expected a string, found {type(record_id).__name__}")
    title = record.get("title", "") or ""
    if not isinstance(title, str):
        raise RecordError(path, line, "title", f"expected a string, found {type(title).__name__}")
    if "documents" not in record:
        raise RecordError(path, line, "documents", "expected a list of documents, found no such field")
    return Example(
        id=str(record_id),
        title=title.strip(),
        documents=_parse_documents(record["documents"], path, line),
        references=_parse_references(record.get("summary"), path, line, require_summary),
    )


def decoded_lines(path: str, lines: Iterable[tuple[int, bytes]]) -> Iterator[tuple[int, str] | RecordError]:
    """(line number, text) of each non-blank line, or a :class:`RecordError` for invalid UTF-8."""
    for line_number, raw in lines:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            yield RecordError(path, line_number, None, f"expected UTF-8 text, found invalid byte at {error.start}")
            continue
        if text.strip():
            yield line_number, text


def iter_records(
    path: str | Path, parse: RecordParser, *, require_summary: bool = True
) -> Iterator[Example | RecordError]:
    """Yield ``parse(line)`` for each non-blank line of a JSONL file, or the :class:`RecordError`
    describing the line. Yielding errors (instead of raising) lets batch summarization report
    a bad line and carry on with the rest.
    """
    path = str(path)
    with open(path, "rb") as handle:
        for item in decoded_lines(path, enumerate(handle, start=1)):
            if isinstance(item, RecordError):
                yield item
                continue
            line_number, text = item
            try:
                yield parse(text, path=path, line=line_number, require_summary=require_summary)
            except RecordError as error:
                yield error


def iter_jsonl(path: str | Path, *, require_summary: bool = True) -> Iterator[Example | RecordError]:
    """Native JSONL records of ``path`` (see :func:`iter_records`)."""
    return iter_records(path, parse_record, require_summary=require_summary)


def read_jsonl(path: str | Path, *, require_summary: bool = True) -> list[Example]:
    """Read a whole native JSONL file; the first malformed record raises :class:`RecordError`."""
    examples = []
    for item in iter_jsonl(path, require_summary=require_summary):
        if isinstance(item, RecordError):
            raise item
        examples.append(item)
    return examples
