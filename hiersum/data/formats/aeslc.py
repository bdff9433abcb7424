"""AESLC (Zhang & Tetreault 2019, email subject line generation), the released folder as it ships.

``enron_subject_line/{train,dev,test}/<name>.subject``: one file per email, the body (a few lines), then a
line ``@subject`` and the subject line; dev and test files also carry ``@ann0``, ``@ann1``, ``@ann2``, each
followed by a subject an annotator wrote. ``data.path`` is the folder holding ``enron_subject_line/`` or that
folder itself; the validation split is ``dev``. A split's files are read in sorted name order.

The body is one document whose paragraphs are its non-blank lines (whitespace collapsed); the references are
the ``@subject`` line first, then ``@ann0``, ``@ann1``... wherever present (an empty annotation is none): dev
and test are multi-reference, scored like SciTLDR (the best-matching reference, and the mean). The id is the
file name's stem. A marker is a whole line (``@subject``, ``@ann<N>``); a body line that merely starts with
``@`` is text. A file without ``@subject``, with an empty subject or body, or that is not UTF-8 is a
:class:`RecordError` naming the file, the line and the section (``body``, ``subject``, ``ann0``...).
"""

from __future__ import annotations

import re
from pathlib import Path

from hiersum.data.formats.lines import ParsedRecord
from hiersum.data.schema import DATA_DOCS, Example, RecordError

CORPUS_FOLDER = "enron_subject_line"
"""The folder of the release that holds the split folders."""
SPLIT_NAMES = {"train": "train", "validation": "dev", "test": "test"}
"""hiersum split -> the release's split folder."""
SUFFIX = ".subject"
SUBJECT = "subject"
BODY = "body"
_MARKER = re.compile(r"^@(subject|ann\d+)$")


def split_folder(data_dir: str | Path, split: str) -> Path:
    """``<data_dir>/enron_subject_line/<split folder>`` when ``data_dir`` holds the release's folder, else
    ``<data_dir>/<split folder>``."""
    data_dir = Path(data_dir)
    root = data_dir / CORPUS_FOLDER if (data_dir / CORPUS_FOLDER).is_dir() else data_dir
    return root / SPLIT_NAMES.get(split, split)


def subject_files(data_dir: str | Path, split: str) -> list[Path]:
    """The ``*.subject`` files of ``split`` in sorted name order; a missing or empty split folder raises
    FileNotFoundError (one line)."""
    folder = split_folder(data_dir, split)
    if not folder.is_dir():
        raise FileNotFoundError(f"AESLC split '{split}' not found: expected the folder {folder} of {SUFFIX} files "
                                f"(data.path: the folder holding {CORPUS_FOLDER}/, or that folder; see {DATA_DOCS})")
    files = sorted(path for path in folder.glob(f"*{SUFFIX}") if path.is_file())
    if not files:
        raise FileNotFoundError(f"AESLC split '{split}': expected {SUFFIX} files in {folder}, found none "
                                f"(see {DATA_DOCS})")
    return files


def _sections(data: bytes, path: str) -> tuple[dict[str, list[str]], dict[str, int], int]:
    """The non-blank lines of each section (``body``, then one per marker), the line of each marker, and the
    file's line count; a line that is not UTF-8 raises the :class:`RecordError` of its section."""
    sections: dict[str, list[str]] = {BODY: []}
    starts: dict[str, int] = {BODY: 1}
    current, number = BODY, 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise RecordError(path, number, current, f"expected UTF-8 text, found an invalid byte at column "
                              f"{error.start + 1}", record_id=Path(path).stem) from None
        marker = _MARKER.match(text.strip())
        if marker is None:
            if text.strip():
                sections[current].append(" ".join(text.split()))
            continue
        current = marker[1]
        if current in sections:
            raise RecordError(path, number, current, f"expected one '@{current}' line, found a second one (the "
                              f"first on line {starts[current]})", record_id=Path(path).stem)
        sections[current], starts[current] = [], number
    return sections, starts, number


def parse_subject_file(data: bytes, *, path: str, require_summary: bool = True) -> Example:
    """The :class:`Example` of one ``.subject`` file's bytes (``path``: its name, for the id and errors)."""
    sections, starts, n_lines = _sections(data, path)
    record_id = Path(path).stem

    def error(line: int, field: str, message: str) -> RecordError:
        return RecordError(path, line, field, message, record_id=record_id)

    if not sections[BODY]:
        raise error(1, BODY, f"expected the email's text before '@{SUBJECT}', found no text")
    if SUBJECT not in sections:
        if require_summary:
            raise error(n_lines, SUBJECT, f"expected a line '@{SUBJECT}' followed by the subject line, found no "
                        f"'@{SUBJECT}' line")
        return Example(id=record_id, title="", documents=[sections[BODY]])
    if not sections[SUBJECT]:
        raise error(starts[SUBJECT], SUBJECT, f"expected the subject line after '@{SUBJECT}', found none")
    annotations = sorted((name for name in sections if name.startswith("ann")), key=lambda name: int(name[3:]))
    references = [" ".join(sections[name]) for name in (SUBJECT, *annotations) if sections[name]]
    return Example(id=record_id, title="", documents=[sections[BODY]], references=references)


def read_subject_file(path: Path) -> list[ParsedRecord]:
    """The one record of a ``.subject`` file (references required): its :class:`Example`, or the
    :class:`RecordError` saying why it was refused."""
    try:
        return [parse_subject_file(path.read_bytes(), path=str(path))]
    except OSError as error:
        return [RecordError(str(path), 1, None, f"expected a readable file, found {error.strerror}",
                            record_id=path.stem)]
    except RecordError as error:
        return [error]
