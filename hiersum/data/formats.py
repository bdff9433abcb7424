"""Input formats of batch summarization: native JSONL, Multi-News JSONL and plain text.

``native``
    One JSON object a line, see :mod:`hiersum.data.readers`.
``multinews``
    One JSON object a line, as the Multi-News release: ``document`` holds the articles joined by
    `` ||||| ``, paragraphs inside an article separated by ``"\\n \\n"``; ``summary`` (optional,
    its leading "– " dropped) and ``id`` (optional, default ``<file stem>-<line>``).
``text``
    A ``.txt`` file is one example: one document, paragraphs separated by blank lines, id = file
    stem. A folder holds one example per ``*.txt`` file, in file-name order.

``-`` reads standard input (a text input on stdin is one example with id ``stdin``).
``auto`` picks ``text`` for a folder or a ``.txt`` file, otherwise looks at the first JSON
record: ``document`` without ``documents`` is Multi-News, anything else native.

Ids are unique within a JSONL input: a record whose id appeared on an earlier line is refused
with a :class:`RecordError` (field ``id``); the first record with that id is kept.

Every reader yields an :class:`Example` per record, or the :class:`RecordError` saying why a
record was refused (file, line, field, reason; and its id when it could be read), like
:func:`hiersum.data.readers.iter_jsonl`. A problem with the input as a whole (missing file,
folder without ``.txt`` files, unknown format) raises :class:`InputError` at once.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from hiersum.data.readers import decoded_lines, load_json_object, parse_record, split_paragraphs
from hiersum.data.schema import Example, RecordError

FORMATS = ("auto", "native", "multinews", "text")
STDIN = "-"
STDIN_NAME = "stdin"
MULTINEWS_ARTICLE_SEPARATOR = "|||||"

Record = Example | RecordError


class InputError(ValueError):
    """The input as a whole cannot be read: missing, unreadable, empty folder, unknown format."""


def read_records(
    source: str | Path, *, input_format: str = "auto", require_summary: bool = False
) -> Iterator[Record]:
    """Every record of ``source`` (a file, a folder of ``.txt`` files, or ``-`` for stdin).

    Raises :class:`InputError` before yielding anything when the input cannot be read at all.
    """
    if input_format not in FORMATS:
        raise InputError(f"input_format must be one of {', '.join(FORMATS)}; found {input_format!r}")
    if str(source) == STDIN:
        data = sys.stdin.buffer.read()
        lines = data.splitlines(keepends=True)
        fmt = detect_json_format(lines) if input_format == "auto" else input_format
        if fmt == "text":
            return iter([parse_text(data, path=STDIN_NAME, record_id=STDIN_NAME)])
        return _iter_json_records(STDIN_NAME, enumerate(lines, start=1), fmt, require_summary)
    path = Path(source)
    if path.is_dir():
        if input_format not in ("auto", "text"):
            raise InputError(f"{path} is a folder; input_format={input_format} reads a file")
        files = sorted(f for f in path.glob("*.txt") if f.is_file())
        if not files:
            raise InputError(f"{path}: expected .txt files in this folder, found none")
        return (read_text_file(f) for f in files)
    if not path.is_file():
        raise InputError(f"input not found: {path}")
    try:
        with open(path, "rb") as handle:
            head = [line for _, line in zip(range(64), handle, strict=False)]
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror}") from None
    fmt = input_format
    if fmt == "auto":
        fmt = "text" if path.suffix == ".txt" else detect_json_format(head)
    if fmt == "text":
        return iter([read_text_file(path)])
    return _iter_json_records(str(path), _file_lines(path), fmt, require_summary)


def detect_json_format(lines: Iterable[bytes]) -> str:
    """``multinews`` when the first non-blank line is an object with ``document`` and no
    ``documents``; ``native`` for any other JSON; ``text`` when it is not JSON at all."""
    for raw in lines:
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return "text" if not raw.lstrip().startswith((b"{", b"[")) else "native"
        if isinstance(record, dict) and "document" in record and "documents" not in record:
            return "multinews"
        return "native"
    return "native"


def _file_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with open(path, "rb") as handle:
        yield from enumerate(handle, start=1)


def _iter_json_records(
    path: str, lines: Iterable[tuple[int, bytes]], fmt: str, require_summary: bool
) -> Iterator[Record]:
    parse = parse_record if fmt == "native" else parse_multinews_record
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


def _with_id(error: RecordError, text: str) -> RecordError:
    """``error`` with the record's id when the line is a JSON object with a usable id."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError:
        return error
    record_id = record.get("id") if isinstance(record, dict) else None
    if isinstance(record_id, (str, int)):
        error.record_id = str(record_id)
    return error


def parse_multinews_record(text: str, *, path: str, line: int, require_summary: bool = False) -> Example:
    """Parse and validate one Multi-News JSON line into an :class:`Example`."""
    record = load_json_object(text, path=path, line=line)
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


def parse_text(data: bytes, *, path: str, record_id: str) -> Record:
    """One plain-text example: a single document, paragraphs separated by blank lines."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        return RecordError(path, line, None, f"expected UTF-8 text, found invalid byte at {error.start}",
                           record_id=record_id)
    paragraphs = split_paragraphs(text)
    if not paragraphs:
        return RecordError(path, 1, None, "expected some text, found an empty document", record_id=record_id)
    return Example(id=record_id, title="", documents=[paragraphs])


def read_text_file(path: Path) -> Record:
    """The example of one ``.txt`` file (id = file stem)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        return RecordError(str(path), 1, None, f"cannot read the file ({error.strerror})", record_id=path.stem)
    return parse_text(data, path=str(path), record_id=path.stem)
