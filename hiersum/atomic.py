"""Replacing a file atomically: the one way hiersum writes a file that must never be seen half written.

:func:`write_atomically` writes into a temporary file beside the target (the same folder, so the same file
system and an atomic rename; a name of this process, so processes writing the same path, such as the ranks of a
DDP run, never write into each other's), fsyncs it, renames it over the target with ``os.replace`` and fsyncs the
folder, so that after a crash or a power cut the target is either the old file or the new one, whole. On any
failure (Ctrl-C included) the temporary file is removed and the target is untouched.

Folders published whole (a prepared split, a model directory) are renamed by their own code
(:mod:`hiersum.data.prepared`, :mod:`hiersum.commands.export`); files appended record by record are
:class:`hiersum.data.jsonl_output.JsonlAppender`'s. This module imports nothing of hiersum.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path


def write_atomically(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Replace ``path`` with the file that ``write(temporary)`` writes (its folders created as needed); returns
    ``path``. The temporary file is fsynced before the rename and the folder after it; the temporary file is
    removed if ``write`` or the rename fails. The new file has the permissions a plain write gives (the umask's)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        write(temporary)
        _fsync(temporary)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):  # some file systems cannot fsync a folder: the rename is done all the same
        _fsync(path.parent)
    return path


def write_text_atomically(path: str | Path, text: str) -> Path:
    """:func:`write_atomically` of ``text`` as UTF-8."""
    return write_atomically(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))


def write_bytes_atomically(path: str | Path, data: bytes) -> Path:
    """:func:`write_atomically` of ``data``."""
    return write_atomically(path, lambda temporary: temporary.write_bytes(data))


def _fsync(path: Path) -> None:
    """Flush ``path`` (a file, or a folder's entries) to the disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
