"""SciTLDR JSONL (Cachola et al. 2020), e.g. the abstract-only SciTLDR-A release.

One JSON object a line::

    {"paper_id": "...", "title": "...", "source": ["sentence", ...], "target": ["TLDR", ...], ...}

``source`` (the abstract's sentences) becomes one document whose paragraphs are the sentences;
``target`` holds several references (the author's TLDR first, then peer-review ones). ``id`` is the
``paper_id`` (or ``<file stem>-<line>`` without one). Other fields (``source_labels``,
``rouge_scores``) are ignored. Splits are ``DIR/{train,dev,test}.jsonl``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hiersum.data.formats.lines import iter_records, load_json_object
from hiersum.data.schema import Example, RecordError


def _strings(value: Any, path: str, line: int, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        found = type(value).__name__ if not isinstance(value, list) else "a list with non-strings"
        raise RecordError(path, line, name, f"expected a list of strings, found {found}")
    return [" ".join(item.split()) for item in value if item.strip()]


def parse_scitldr_record(text: str, *, path: str, line: int, require_summary: bool = True) -> Example:
    """Parse and validate one SciTLDR JSON line into an :class:`Example`."""
    return parse_scitldr_object(load_json_object(text, path=path, line=line), path=path, line=line,
                                require_summary=require_summary)


def parse_scitldr_object(record: dict[str, Any], *, path: str, line: int, require_summary: bool = True) -> Example:
    """Validate one SciTLDR record (a JSON line's object, or a row of an Arrow/parquet corpus) into an
    :class:`Example`."""
    record_id = record.get("paper_id", f"{Path(path).stem}-{line}")
    if not isinstance(record_id, (str, int)):
        raise RecordError(path, line, "paper_id", f"expected a string, found {type(record_id).__name__}")
    title = record.get("title") or ""
    if not isinstance(title, str):
        raise RecordError(path, line, "title", f"expected a string, found {type(title).__name__}")
    if "source" not in record:
        raise RecordError(path, line, "source", "expected a list of sentences, found no such field")
    sentences = _strings(record["source"], path, line, "source")
    if not sentences:
        raise RecordError(path, line, "source", "expected some text, found no sentence")
    references = _strings(record.get("target", []), path, line, "target")
    if require_summary and not references:
        raise RecordError(path, line, "target", "expected at least one reference TLDR, found none")
    return Example(id=str(record_id), title=title.strip(), documents=[sentences], references=references)


def iter_scitldr(path: str | Path, *, require_summary: bool = True) -> Iterator[Example | RecordError]:
    """Yield an :class:`Example` per non-blank line, or the :class:`RecordError` describing it."""
    return iter_records(path, parse_scitldr_record, require_summary=require_summary)
