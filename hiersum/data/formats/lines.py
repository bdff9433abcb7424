"""What the line formats share: a file read one record a line, each line parsed on its own.

A line format (native JSONL, Multi-News, SciTLDR, any format registered with a ``parse_line``) gives a
:data:`RecordParser`; :func:`iter_line_records` (ids unique within the file) and :func:`iter_records`
run it over the non-blank lines of a file, yielding an :class:`Example` per line or the
:class:`RecordError` that says why the line was refused (file, line, field, reason).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from hiersum.data.schema import Example, RecordError

ParsedRecord = Example | RecordError
"""A record as a reader parsed it: its :class:`Example`, or the :class:`RecordError` that says why it was refused."""
RecordParser = Callable[..., Example]
"""``parse(text, *, path, line, require_summary) -> Example``, raising :class:`RecordError`."""
ObjectParser = Callable[..., Example]
"""``parse(record: dict, *, path, line, require_summary) -> Example`` of a record already read as a dict (a
JSON line's object, a row of a ``datasets`` corpus), raising :class:`RecordError`."""

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A JSON escape of a UTF-16 surrogate (``\\ud800``): valid only as the half of a pair."""


def split_paragraphs(document: str) -> list[str]:
    """Split a document on blank lines; collapse inner whitespace; drop empty paragraphs."""
    paragraphs = (" ".join(p.split()) for p in _PARAGRAPH_BREAK.split(document))
    return [p for p in paragraphs if p]


def parse_json(text: str | bytes) -> Any:
    """``json.loads(text)``; whatever it refuses (invalid JSON or UTF-8, a number of more digits than Python
    converts, nesting deeper than the recursion limit) raises ``ValueError`` saying why."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(error.msg) from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError as error:  # an integer of too many digits, invalid UTF-8 in bytes
        raise ValueError(str(error).splitlines()[0]) from None


def load_json_object(text: str, *, path: str, line: int) -> dict[str, Any]:
    """The JSON object on one line, or a :class:`RecordError` saying what was found instead (invalid JSON,
    another JSON value, a string that is not valid Unicode: a lone surrogate escape)."""
    try:
        record = parse_json(text)
    except ValueError as error:
        raise RecordError(path, line, None, f"expected a JSON object, found invalid JSON ({error})") from None
    if not isinstance(record, dict):
        raise RecordError(path, line, None, f"expected a JSON object, found {type(record).__name__}")
    field = lone_surrogate_field(record) if _SURROGATE_ESCAPE.search(text) else None
    if field is not None:
        raise RecordError(path, line, field, "expected Unicode text, found a lone surrogate escape "
                          "(half of a UTF-16 pair, which no UTF-8 output can hold)")
    return record


def lone_surrogate_field(record: dict[str, Any]) -> str | None:
    """The first field of ``record`` whose name or value holds a lone surrogate, or None."""
    for name, value in record.items():
        try:
            json.dumps([name, value], ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return None


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


def iter_records(path: str | Path, parse: RecordParser, *, require_summary: bool = True) -> Iterator[ParsedRecord]:
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


def iter_line_records(
    path: str | Path, parse: RecordParser, *, require_summary: bool, lines: Iterable[tuple[int, bytes]] | None = None
) -> Iterator[ParsedRecord]:
    """``parse`` of every non-blank line of ``path`` (or of ``lines``, (number, bytes) pairs, named
    ``path``), or the :class:`RecordError` of the line. A record whose id appeared on an earlier line
    is refused (field ``id``); the first one is kept."""
    path = str(path)
    if lines is None:
        lines = _file_lines(Path(path))
    first_line: dict[str, int] = {}  # line of each id's first record
    for item in decoded_lines(path, lines):
        if isinstance(item, RecordError):
            yield item
            continue
        line_number, text = item
        try:
            example = parse(text, path=path, line=line_number, require_summary=require_summary)
        except RecordError as error:
            yield _with_id(error, text)
            continue
        if example.id in first_line:
            yield RecordError(path, line_number, "id", f"expected a unique id, found {example.id!r} again "
                              f"(first on line {first_line[example.id]}; only that record is kept)",
                              record_id=example.id)
            continue
        first_line[example.id] = line_number
        yield example


def _file_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with open(path, "rb") as handle:
        yield from enumerate(handle, start=1)


def _with_id(error: RecordError, text: str) -> RecordError:
    """``error`` with the record's id when the line is a JSON object with a usable id."""
    try:
        record = parse_json(text)
    except ValueError:
        return error
    record_id = record.get("id") if isinstance(record, dict) else None
    if isinstance(record_id, (str, int)):
        error.record_id = str(record_id)
    return error
