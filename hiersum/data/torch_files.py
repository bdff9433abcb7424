"""Reading a file written by ``torch.save`` (a checkpoint, a WikiSum shard) safely and with one kind of error.

:func:`load_torch_file` is the one ``torch.load`` of hiersum: always ``weights_only=True``, and any failure
to read the file (missing, a directory, empty, truncated, not a torch file, objects ``weights_only``
refuses) raises :class:`TorchFileError`, a :class:`~hiersum.errors.UsageError` whose one-line message
names the file, what it is and what was expected; the original exception is its ``__cause__``.

PyTorch's message for a ``weights_only`` refusal advises loading with ``weights_only=False``: for a file
of hiersum that advice is wrong (none of its files holds such objects), so it is never repeated; the
message says instead that the file holds objects the expected file never holds.
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from hiersum.errors import UsageError

ZIP_MAGIC = b"PK\x03\x04"
"""The first bytes of a zip archive (the format ``torch.save`` writes)."""
PICKLE_PROTOCOL_2 = b"\x80"
"""The first byte of a pickle of protocol 2 or later (the legacy ``torch.save`` format starts so)."""
_GLOBAL = re.compile(r"GLOBAL ([\w.]+)")
_HEAD_BYTES = 64


class TorchFileError(UsageError):
    """A file that cannot be read as the torch file expected: ``PATH: FOUND; expected EXPECTED[; HINT]``."""

    def __init__(self, path: str | Path, found: str, expected: str, hint: str | None = None) -> None:
        self.path, self.found, self.expected, self.hint = str(path), found, expected, hint
        super().__init__(f"{path}: {found}; expected {expected}" + (f"; {hint}" if hint else ""))

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.path, self.found, self.expected, self.hint)


def load_torch_file(path: str | Path, *, expected: str, error: type[TorchFileError] = TorchFileError,
                    map_location: str | torch.device = "cpu", safe_globals: Sequence[Any] = (),
                    noun: str = "file") -> Any:
    """``torch.load(path, weights_only=True)`` (with ``safe_globals`` allowed); a file that cannot be read
    raises ``error`` (:class:`TorchFileError` or a subclass) saying what the file is and ``expected``
    (a missing one: ``NOUN not found``)."""
    path = Path(path)
    problem = file_problem(path, noun=noun)
    if problem:
        raise error(path, problem, expected)
    try:
        with torch.serialization.safe_globals(list(safe_globals)):
            return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as failure:  # whatever torch.load raises: the file is not what was expected
        raise error(path, load_failure(path, failure), expected) from failure


def file_problem(path: Path, *, noun: str = "file") -> str | None:
    """Why ``path`` is not a file to load (missing: ``NOUN not found``, a directory, empty, unreadable), or None."""
    if not path.exists():
        return f"{noun} not found"
    if path.is_dir():
        return "is a directory"
    if not path.is_file():
        return "is not a regular file"
    try:
        size = path.stat().st_size
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    return "is an empty file (0 bytes)" if size == 0 else None


def load_failure(path: Path, failure: Exception) -> str:
    """What the file is, given that ``torch.load(weights_only=True)`` failed with ``failure``."""
    if isinstance(failure, pickle.UnpicklingError) and (name := _GLOBAL.search(str(failure))):
        return (f"holds objects that no hiersum file holds ({name.group(1)}): not a hiersum file, "
                "or one from an untrusted source")
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEAD_BYTES)
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    return describe_bytes(head, failure)


def describe_bytes(head: bytes, failure: Exception) -> str:
    """What a file that ``torch.load`` could not read is, from its first bytes."""
    if head.startswith(ZIP_MAGIC):
        reason = _first_line(failure) if isinstance(failure, RuntimeError) else type(failure).__name__
        return f"is a truncated or damaged torch file (a zip archive torch cannot read: {reason})"
    if head.startswith(PICKLE_PROTOCOL_2):
        return "is a truncated or damaged torch file (a pickle torch cannot read)"
    if _is_text(head):
        text = head.decode("utf-8", errors="ignore").strip().splitlines()
        return f"is a text file (starting {text[0][:30]!r}), not a torch file" if text else "is a blank text file"
    return f"is not a torch file (its first bytes are {head[:8].hex(' ')})"


def _is_text(head: bytes) -> bool:
    """Whether ``head`` is the start of a text file: UTF-8 (a character cut at its end allowed), printable."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start <= len(head) - 4:
            return False
        text = head[: error.start].decode("utf-8")
    return all(char.isprintable() or char in "\t\n\r\f" for char in text)


def _first_line(failure: Exception) -> str:
    """The first sentence of torch's message (the rest is advice)."""
    text = str(failure).strip().splitlines()[0] if str(failure).strip() else type(failure).__name__
    return text.split(". ")[0].rstrip(".")


def describe_object(value: Any) -> str:
    """A few words on what a loaded file holds: ``a list of 3 items``, ``a dict with keys ['a', 'b']``."""
    if isinstance(value, dict):
        keys = sorted(map(str, value))
        shown = ", ".join(repr(key) for key in keys[:6]) + (", ..." if len(keys) > 6 else "")
        return f"a dict with keys [{shown}]" if keys else "an empty dict"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)} items"
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {list(value.shape)}"
    return f"a {type(value).__name__}"
