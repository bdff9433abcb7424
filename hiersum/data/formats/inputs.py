"""Input formats of batch summarization: the line formats of the registry, and plain text.

``native`` (or ``jsonl``)
    One JSON object a line, see :mod:`hiersum.data.formats.native`.
``multinews``
    One JSON object a line, as the Multi-News release (:mod:`hiersum.data.formats.multinews`).
``scitldr``, and any format registered with a line parser
    See :mod:`hiersum.data.formats.registry` (``FormatSpec.parse_line``).
``text``
    A ``.txt`` file is one example: one document, paragraphs separated by blank lines, id = file
    stem (:mod:`hiersum.data.formats.text`). A folder holds one example per ``*.txt`` file, in
    file-name order.

A ``.parquet`` or ``.arrow`` file, or the folder of one split of a ``datasets`` ``save_to_disk`` corpus,
is read row by row (:mod:`hiersum.data.formats.arrow`), each row the fields of a JSON line of the format
(``auto``: by its columns, ``documents`` native, ``document`` Multi-News, ``article`` CNN/DailyMail, ``source``
SciTLDR).

``line_pairs``
    The source file of the line-pair layout (``val.source``, ``test.src``...: one example a line, no reference),
    its documents cut at ``layout``'s ``document_separator``, its paragraphs at its ``paragraph_markers``
    (:mod:`hiersum.data.formats.line_pairs`); line N's id is ``<stem>-<N>``, as the corpus reader gives it.

``-`` reads standard input (a text input on stdin is one example with id ``stdin``).
``auto`` picks ``text`` for a folder or a ``.txt`` file, ``line_pairs`` for a file named as a line pair's source
(``.source``, ``.src``, ``.src.cleaned``), otherwise looks at the first JSON
record: ``document`` without ``documents`` is Multi-News, ``article`` without either CNN/DailyMail, anything
else native. A format read only as a corpus (``aeslc``: folders of files) is no input format: refused in one line.

Ids are unique within a JSONL input: a record whose id appeared on an earlier line is refused
with a :class:`RecordError` (field ``id``); the first record with that id is kept.

Every reader yields an :class:`Example` per record, or the :class:`RecordError` saying why a
record was refused (file, line, field, reason; and its id when it could be read), like
:func:`hiersum.data.formats.native.iter_jsonl`. A problem with the input as a whole (missing file,
folder without ``.txt`` files, unknown format) raises :class:`InputError` at once.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from hiersum.data.formats.arrow import (
    ColumnError,
    check_schema,
    file_schema,
    iter_table_records,
    table_input_files,
)
from hiersum.data.formats.line_pairs import is_source_file
from hiersum.data.formats.lines import ParsedRecord, iter_line_records, parse_json
from hiersum.data.formats.registry import FORMATS as DATA_FORMATS
from hiersum.data.formats.registry import line_formats
from hiersum.data.formats.text import parse_text, read_text_file
from hiersum.errors import UsageError

INPUT_MODES = ("auto", "text")
"""Inputs that are not a registered line format: detection, and plain text."""
STDIN = "-"
STDIN_NAME = "stdin"


INPUTS_DOCS = "docs/summarizing.md#inputs"
"""The documentation of the inputs, which an error about the input as a whole points to."""


class InputError(UsageError):
    """The input as a whole cannot be read: missing, unreadable, empty folder, unknown format (a usage error:
    one line, exit status 2)."""


def input_formats() -> list[str]:
    """The values of ``input_format``: ``auto``, ``text`` and every registered line format (and alias)."""
    return [*INPUT_MODES, *sorted(line_formats())]


LINE_PAIRS = "line_pairs"
"""The input format of a line pair's source file (:mod:`hiersum.data.formats.line_pairs`)."""


def reads_line_pairs(source: str | Path, input_format: str) -> bool:
    """True when :func:`read_records` reads ``source`` as a line pair's source file: ``input_format=line_pairs``, or
    ``auto`` and a file named so (``val.source``)."""
    return input_format == LINE_PAIRS or (input_format == "auto" and str(source) != STDIN and is_source_file(source))


def read_records(
    source: str | Path, *, input_format: str = "auto", require_summary: bool = False,
    layout: Mapping[str, Any] | None = None,
) -> Iterator[ParsedRecord]:
    """Every record of ``source`` (a file, a folder of ``.txt`` files, or ``-`` for stdin). ``layout``: the values
    a format's reader takes (``FormatSpec.options``: the line-pair layout's ``document_separator`` and
    ``paragraph_markers``); None or a missing value: none.

    Raises :class:`InputError` before yielding anything when the input cannot be read at all.
    """
    fmt = input_format
    if fmt not in input_formats():
        raise InputError(_not_an_input_format(fmt))
    if str(source) == STDIN:
        data = sys.stdin.buffer.read()
        lines = data.splitlines(keepends=True)
        if fmt == "auto":
            fmt = detect_json_format(lines)
        if fmt == "text":
            return iter([parse_text(data, path=STDIN_NAME, record_id=STDIN_NAME)])
        return _iter_line_records(STDIN_NAME, enumerate(lines, start=1), fmt, require_summary, layout)
    path = Path(source)
    try:
        tables = table_input_files(path)
    except (FileNotFoundError, ColumnError) as error:
        raise InputError(f"{error} (see {INPUTS_DOCS})") from None
    if tables is not None:
        return _table_records(tables, fmt, require_summary)
    if path.is_dir():
        if fmt not in INPUT_MODES:
            raise InputError(f"{path} is a folder; input_format={fmt} reads a file (see {INPUTS_DOCS})")
        files = sorted(f for f in path.glob("*.txt") if f.is_file())
        if not files:
            raise InputError(f"{path}: expected .txt files in this folder, found none (see {INPUTS_DOCS})")
        return (read_text_file(f) for f in files)
    if not path.is_file():
        raise InputError(f"input not found: {path} (see {INPUTS_DOCS})")
    try:
        with open(path, "rb") as handle:
            head = [line for _, line in zip(range(64), handle, strict=False)]
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror}") from None
    if fmt == "auto":
        fmt = "text" if path.suffix == ".txt" else LINE_PAIRS if is_source_file(path) else detect_json_format(head)
    if fmt == "text":
        return iter([read_text_file(path)])
    return _iter_line_records(str(path), None, fmt, require_summary, layout)


def _not_an_input_format(fmt: str) -> str:
    """Why ``input_format=fmt`` is refused: a corpus format read only as splits (AESLC's folders of files), or no
    format at all."""
    expected = f"expected one of {', '.join(input_formats())}"
    if fmt in DATA_FORMATS:
        return (f"input_format={fmt}: {DATA_FORMATS[fmt].description} is read as a corpus by hiersum train and "
                f"hiersum evaluate (data={fmt}), not as an input of hiersum summarize; {expected} (e.g. the texts "
                f"as .txt files; see {INPUTS_DOCS})")
    return f"input_format must be one of {', '.join(input_formats())}; found {fmt!r} (see {INPUTS_DOCS})"


def detect_json_format(lines: Iterable[bytes]) -> str:
    """The format of the first line that is a JSON object with ``document``, ``documents`` or ``article`` (lines
    before it are passed over: a malformed first record does not decide): ``native`` for ``documents``,
    ``multinews`` for ``document``, ``cnndm`` for ``article``; without such a line, ``text`` when the first non-blank
    line is not JSON at all, else ``native``."""
    first: bytes | None = None
    for raw in lines:
        if not raw.strip():
            continue
        try:
            record = parse_json(raw)
        except ValueError:
            record = None
        if isinstance(record, dict) and (found := _detected(record.keys())) is not None:
            return found
        if first is None:
            first = raw if record is None else b"{"
    return "text" if first is not None and not first.lstrip().startswith((b"{", b"[")) else "native"


def detect_table_format(schema: pa.Schema) -> str:
    """The line format of a table by its columns: ``documents`` native, ``document`` Multi-News, ``source``
    SciTLDR; a table with none of them raises :class:`InputError`."""
    found = _detected(schema.names, ("source", "scitldr"))
    if found is None:
        raise InputError(f"expected a column documents (native), document (multinews), article (cnndm) or source "
                         f"(scitldr), found the columns {', '.join(schema.names) or 'none'}; or give input_format "
                         f"(see {INPUTS_DOCS})")
    return found


_DETECTED = (("documents", "native"), ("document", "multinews"), ("article", "cnndm"))
"""The field that makes a record (a JSON line's object, a table's columns) one of a format, first match first."""


def _detected(fields: Iterable[str], *more: tuple[str, str]) -> str | None:
    """The format of the first of :data:`_DETECTED` (then ``more``) whose field ``fields`` holds, or None."""
    names = set(fields)
    return next((name for field, name in (*_DETECTED, *more) if field in names), None)


def _table_records(files: list[Path], fmt: str, require_summary: bool) -> Iterator[ParsedRecord]:
    """The records of a ``datasets`` table input (:mod:`hiersum.data.formats.arrow`); its files' columns are
    checked before anything is read (a missing or mistyped column: :class:`InputError`)."""
    if fmt == "text":
        raise InputError(f"{files[0]}: input_format=text reads .txt files, not Arrow or parquet (see {INPUTS_DOCS})")
    try:
        schemas = [file_schema(path) for path in files]
        spec = DATA_FORMATS[line_formats()[detect_table_format(schemas[0]) if fmt == "auto" else fmt]]
        if spec.parse_object is None:
            raise InputError(f"input_format={fmt} reads no Arrow or parquet file (see {INPUTS_DOCS})")
        for path, schema in zip(files, schemas, strict=True):
            check_schema(path, schema, spec.columns, require_references=require_summary)
    except ColumnError as error:
        raise InputError(str(error)) from None
    return iter_table_records(files, spec.parse_object, spec.columns, require_summary=require_summary)


def _iter_line_records(
    path: str, lines: Iterable[tuple[int, bytes]] | None, fmt: str, require_summary: bool,
    layout: Mapping[str, Any] | None,
) -> Iterator[ParsedRecord]:
    """The records of a line format (``fmt``: a registered name or alias; its reader taking the values of ``layout``
    it takes); ``lines`` None: read ``path``."""
    parse = DATA_FORMATS[line_formats()[fmt]].with_options(layout or {}).parse_line
    assert parse is not None
    return iter_line_records(path, parse, require_summary=require_summary, lines=lines)
