"""Append-only JSONL output that a killed run (even ``kill -9``) leaves resumable, exactly once.

Each record is one line written with a single ``os.write`` on a file opened with ``O_APPEND``;
:meth:`JsonlAppender.sync` fsyncs after each batch. The only damage a kill can do is a partial
last line, which :func:`completed_ids` cuts off before a rerun reads the ids already written.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

from hiersum.atomic import write_text_atomically
from hiersum.errors import UsageError


class OutputError(UsageError):
    """The existing output file is not one this program wrote (a usage error: one line, exit status 2)."""


def completed_ids(path: Path) -> list[str]:
    """Ids of the records already in ``path`` (in file order), after truncating a partial last line."""
    if not path.exists():
        return []
    with open(path, "r+b") as handle:
        data = handle.read()
        end = data.rfind(b"\n") + 1  # bytes up to the last complete line
        if end < len(data):
            handle.truncate(end)
    ids = []
    for number, line in enumerate(data[:end].splitlines(), start=1):
        if not line.strip():
            continue
        try:
            ids.append(str(json.loads(line)["id"]))
        except (ValueError, KeyError, TypeError):
            raise OutputError(
                f"{path}:{number}: expected a JSON object with an 'id' (a summary written by this program); "
                "remove the file or pass resume=false"
            ) from None
    return ids


class JsonlAppender:
    """Appends JSON objects, one a line, to ``path`` (``None``: standard output).

    ``truncate`` empties the file first (a fresh run); otherwise lines are appended (a resumed run).
    """

    def __init__(self, path: Path | None, *, truncate: bool = False) -> None:
        self.path = path
        self.fd: int | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (os.O_TRUNC if truncate else 0)
            self.fd = os.open(path, flags, 0o644)

    def write(self, record: dict[str, Any]) -> None:
        """Write ``record`` as one complete line with a single write."""
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        if self.fd is None:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
            return
        view = memoryview(line)
        while view:  # a regular file takes the whole line at once; the loop only guards the contract
            view = view[os.write(self.fd, view) :]

    def sync(self) -> None:
        """Make the lines written so far durable (fsync; a no-op on standard output)."""
        if self.fd is not None:
            os.fsync(self.fd)

    def close(self) -> None:
        if self.fd is not None:
            os.fsync(self.fd)
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


def write_jsonl_atomically(path: Path, records: list[dict[str, Any]]) -> None:
    """Replace ``path`` with ``records`` (:func:`hiersum.atomic.write_atomically`: a temporary file of this
    process renamed over it, so processes writing the same file, such as the ranks of a DDP run, never write into
    each other's)."""
    write_text_atomically(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def write_json_atomically(path: Path, value: Any) -> None:
    """Replace ``path`` with ``value`` as indented JSON, as :func:`write_jsonl_atomically` does."""
    write_text_atomically(path, json.dumps(value, indent=2, ensure_ascii=False) + "\n")
