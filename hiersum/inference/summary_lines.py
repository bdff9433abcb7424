"""Records and their output lines: what ``hiersum summarize`` writes, ``hiersum serve`` answers and
:meth:`hiersum.inference.pipeline.Summarizer.summarize` returns, for the same record and options (all three through
:meth:`hiersum.inference.pipeline.Summarizer.lines`).

A record is a native JSON object (``{"id", "title", "documents"}``) or plain text (``{"text"}``:
:func:`example_of`); its line (:func:`summary_line`) holds ``id``, ``summary``, ``score``,
``n_paragraphs_kept``, ``n_paragraphs_dropped``, and ``n_best`` and ``top_paragraphs`` when asked for.
"""

from __future__ import annotations

import json
from typing import Any

from hiersum.config import TextNormalization
from hiersum.data.formats.native import parse_record
from hiersum.data.formats.text import parse_text
from hiersum.data.normalization import readable
from hiersum.data.schema import EncodedExample, Example, RecordError
from hiersum.data.selection import TITLE_DOCUMENT
from hiersum.inference.batched import Summary


def summary_line(summary: Summary, source: EncodedExample, *, n_best: bool,
                 normalization: TextNormalization = TextNormalization.none) -> dict[str, Any]:
    """The output line of one summary (see the module docstring); its text is made readable for the checkpoint's
    ``normalization`` (``ptb``: detokenized, :func:`hiersum.data.normalization.readable`)."""
    record: dict[str, Any] = {
        "id": summary.id, "summary": readable(summary.summary, normalization), "score": summary.score,
        "n_paragraphs_kept": len(source.paragraphs), "n_paragraphs_dropped": source.n_dropped_paragraphs,
    }
    if n_best:
        record["n_best"] = [{"summary": readable(text, normalization), "score": score}
                            for text, score in summary.n_best]
    if summary.top_paragraphs is not None:
        record["top_paragraphs"] = [
            {"document": document, "paragraph": paragraph, "weight": weight}
            for document, paragraph, weight in summary.top_paragraphs
        ]
    return record


def example_of(record: dict[str, Any], *, source: str, line: int) -> Example:
    """The :class:`Example` of a native record, or with ``text`` (and no ``documents``) of a plain-text one
    (one document, paragraphs separated by blank lines), checked as the batch readers check them; a wrong field
    raises :class:`RecordError` (``source``, ``line``: where the record comes from; its default id is
    ``<source>-<line>``)."""
    if "text" in record and "documents" not in record:
        text = record["text"]
        if not isinstance(text, str):
            raise RecordError(source, line, "text", f"expected a string, found {type(text).__name__}")
        record_id = record.get("id", f"{source}-{line}")
        if not isinstance(record_id, (str, int)):
            raise RecordError(source, line, "id", f"expected a string, found {type(record_id).__name__}")
        parsed = parse_text(text.encode("utf-8", "surrogatepass"), path=source, record_id=str(record_id))
        if isinstance(parsed, RecordError):
            raise RecordError(source, line, "text", parsed.reason)
        return parsed
    return parse_record(json.dumps(record), path=source, line=line, require_summary=False)


def attended_paragraphs(record: dict[str, Any], example: Example) -> list[dict[str, Any]]:
    """The ``top_paragraphs`` of an output line with their text (``text``, ``document``, ``paragraph``,
    ``attention``; highest weight first); [] when the line has none."""
    return [
        {"text": example.title if entry["document"] == TITLE_DOCUMENT else
         example.documents[entry["document"]][entry["paragraph"]],
         "document": entry["document"], "paragraph": entry["paragraph"], "attention": entry["weight"]}
        for entry in record.get("top_paragraphs", [])
    ]
