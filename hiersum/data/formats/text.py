"""Plain text, an input of batch summarization (``input_format=text``).

A ``.txt`` file is one example: one document, paragraphs separated by blank lines, id = file stem.
Text on standard input is one example too (id ``stdin``).
"""

from __future__ import annotations

from pathlib import Path

from hiersum.data.formats.lines import ParsedRecord, split_paragraphs
from hiersum.data.schema import Example, RecordError


def parse_text(data: bytes, *, path: str, record_id: str) -> ParsedRecord:
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


def read_text_file(path: Path) -> ParsedRecord:
    """The example of one ``.txt`` file (id = file stem)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        return RecordError(str(path), 1, None, f"cannot read the file ({error.strerror})", record_id=path.stem)
    return parse_text(data, path=str(path), record_id=path.stem)
