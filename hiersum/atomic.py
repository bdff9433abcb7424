"""Replacing a file or a folder atomically: the one way hiersum writes what must never be seen half written.

:func:`write_atomically` writes into a temporary file beside the target (the same folder, so the same file
system and an atomic rename; a name of this process, so processes writing the same path, such as the ranks of a
DDP run, never write into each other's), fsyncs it, renames it over the target with ``os.replace`` and fsyncs the
folder, so that after a crash or a power cut the target is either the old file or the new one, whole. On any
failure (Ctrl-C included) the temporary file is removed and the target is untouched.

A folder published whole (a prepared split, a cached corpus, a model directory) is written into a temporary
folder beside it and renamed likewise (:func:`publishing_directory`). Files appended record by record are
:class:`hiersum.data.jsonl_output.JsonlAppender`'s. This module imports nothing of hiersum.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal


def write_atomically(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Replace ``path`` with the file that ``write(temporary)`` writes (its folders created as needed); returns
    ``path``. The temporary file is fsynced before the rename and the folder after it; the temporary file is
    removed if ``write`` or the rename fails. The new file has the permissions a plain write gives (the umask's)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = _temporary_name(path)
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


@contextlib.contextmanager
def publishing_directory(target: str | Path, *, if_exists: Literal["replace", "keep"] = "replace",
                         remove_stale: bool = False) -> Iterator[Path]:
    """A fresh temporary folder beside ``target`` to write into (the same folder, so the same file system; a name
    of this process, as :func:`write_atomically`'s), renamed to ``target`` when the block ends without an error,
    removed on any failure (Ctrl-C included), ``target`` then untouched. The folder's parent is fsynced after the
    rename; the folder has the permissions a plain ``mkdir`` gives (the umask's).

    ``if_exists``, when ``target`` exists by the rename: ``replace`` moves it aside, renames the new folder in
    and deletes the old one (put back if the rename fails); ``keep`` keeps it (another process published the
    same folder first) and removes ours. ``remove_stale``: first remove the temporary folders of publications of
    ``target`` that were killed, which is only safe where no other process publishes it at once (under a lock)."""
    target = Path(os.path.abspath(target))  # a rename needs a real name (not ".")
    target.parent.mkdir(parents=True, exist_ok=True)
    if remove_stale:
        for stale in target.parent.glob(f".{target.name}.*.tmp"):
            shutil.rmtree(stale, ignore_errors=True)
    temporary = _temporary_name(target)
    temporary.mkdir()
    try:
        yield temporary
        if if_exists == "keep":
            try:
                os.rename(temporary, target)
            except OSError:  # another process renamed its folder first
                if not target.is_dir():
                    raise
        else:
            _replace_directory(temporary, target)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)  # gone after a rename
    with contextlib.suppress(OSError):
        _fsync(target.parent)


def _replace_directory(new: Path, target: Path) -> None:
    """Rename ``new`` to ``target``, replacing an existing ``target`` (moved aside, then deleted)."""
    if not target.exists():
        os.replace(new, target)
        return
    old = _temporary_name(target, ".replaced")
    os.replace(target, old)
    try:
        os.replace(new, target)
    except BaseException:
        os.replace(old, target)  # the earlier folder back in place
        raise
    shutil.rmtree(old)


def _temporary_name(path: Path, suffix: str = ".tmp") -> Path:
    """``.<name>.<pid>-<random>.tmp`` beside ``path``."""
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}{suffix}")


def _fsync(path: Path) -> None:
    """Flush ``path`` (a file, or a folder's entries) to the disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
