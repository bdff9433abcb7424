"""The native JSONL format, with validation that names file, line and field.

Native JSONL, one example a line::

    {"id": "optional", "title": "optional topic",
     "documents": ["a document; paragraphs separated by blank lines", "another"],
     "summary": "reference text, or a list of references"}

``documents`` may also be a list of lists of paragraph strings (pre-split).
``summary`` is optional where only summarizing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hiersum.data.formats.lines import iter_records, load_json_object, split_paragraphs
from hiersum.data.schema import Example, RecordError


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


def parse_record(text: str, *, path: str, line: int, require_summary: bool) -> Example:
    """Parse and validate one JSONL line into an :class:`Example`."""
    return parse_native_object(load_json_object(text, path=path, line=line), path=path, line=line,
                               require_summary=require_summary)


def parse_native_object(record: dict[str, Any], *, path: str, line: int, require_summary: bool) -> Example:
    """Validate one native record (a JSON line's object, or a row of an Arrow/parquet corpus) into an
    :class:`Example`; ``line``: its line (row) in ``path``."""
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


def iter_jsonl(path: str | Path, *, require_summary: bool = True) -> Iterator[Example | RecordError]:
    """Native JSONL records of ``path`` (see :func:`hiersum.data.formats.lines.iter_records`)."""
    return iter_records(path, parse_record, require_summary=require_summary)


def read_jsonl(path: str | Path, *, require_summary: bool = True) -> list[Example]:
    """Read a whole native JSONL file; the first malformed record raises :class:`RecordError`."""
    examples = []
    for item in iter_jsonl(path, require_summary=require_summary):
        if isinstance(item, RecordError):
            raise item
        examples.append(item)
    return examples
