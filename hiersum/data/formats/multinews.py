"""Multi-News JSONL (Fabbri et al. 2019), one JSON object a line, as the release.

``document`` holds the articles joined by `` ||||| ``, paragraphs inside an article separated by
``"\\n \\n"``; ``summary`` (optional where only summarizing, its leading "– " dropped) and ``id``
(optional, default ``<file stem>-<line>``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hiersum.data.formats.lines import load_json_object, split_paragraphs
from hiersum.data.schema import Example, RecordError

MULTINEWS_ARTICLE_SEPARATOR = "|||||"


def parse_multinews_record(text: str, *, path: str, line: int, require_summary: bool = False) -> Example:
    """Parse and validate one Multi-News JSON line into an :class:`Example`."""
    return parse_multinews_object(load_json_object(text, path=path, line=line), path=path, line=line,
                                  require_summary=require_summary)


def parse_multinews_object(record: dict[str, Any], *, path: str, line: int, require_summary: bool = False) -> Example:
    """Validate one Multi-News record (a JSON line's object, or a row of an Arrow/parquet corpus) into an
    :class:`Example`."""
    record_id = record.get("id", f"{Path(path).stem}-{line}")
    if not isinstance(record_id, (str, int)):
        raise RecordError(path, line, "id", f"expected a string, found {type(record_id).__name__}")
    if "document" not in record:
        raise RecordError(path, line, "document", "expected articles joined by ' ||||| ', found no such field")
    document = record["document"]
    if not isinstance(document, str):
        raise RecordError(path, line, "document", f"expected a string, found {type(document).__name__}")
    articles = [split_paragraphs(a) for a in document.split(MULTINEWS_ARTICLE_SEPARATOR)]
    documents = [a for a in articles if a]
    if not documents:
        raise RecordError(path, line, "document", "expected some text, found an empty document")
    summary = record.get("summary")
    if summary is not None and not isinstance(summary, str):
        raise RecordError(path, line, "summary", f"expected a string, found {type(summary).__name__}")
    reference = (summary or "").strip().removeprefix("–").strip()
    if require_summary and not reference:
        raise RecordError(path, line, "summary", "expected a reference summary, found none")
    return Example(id=str(record_id), title="", documents=documents, references=[reference] if reference else [])
