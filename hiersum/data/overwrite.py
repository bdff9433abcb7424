"""Refusing to write over an input: every command that writes files checks, before it opens anything for
writing, that none of its outputs is one of its inputs (:func:`refuse_overwriting_inputs`).

"The same file" is decided by the file system (``os.path.samefile``: device and inode), not by comparing
path strings: ``out.jsonl``, ``./out.jsonl``, an absolute path, a symbolic link to it and a hard link to it
are all the same file. An output that does not exist yet cannot be an input. An input folder (a folder of
``.txt`` files) stands for every file directly in it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from hiersum.errors import UsageError

PathLike = str | os.PathLike[str]


def _existing_files(path: PathLike) -> Iterator[Path]:
    """``path`` itself when it is a file; the files directly in it when it is a folder; nothing otherwise."""
    path = Path(path)
    if path.is_dir():
        yield from (child for child in sorted(path.iterdir()) if child.is_file())
    elif path.is_file():
        yield path


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them vanished or cannot be inspected: it cannot be overwritten through the other
        return False


def refuse_overwriting_inputs(
    outputs: Mapping[str, PathLike | Iterable[PathLike] | None],
    inputs: Mapping[str, PathLike | Iterable[PathLike] | None],
) -> None:
    """Raise :class:`UsageError` when a file of ``outputs`` is a file of ``inputs``.

    Both map an option's name (``output``, ``input``, ``checkpoint``, ...) to a path, a list of paths
    or None (the option is not given, or names standard input/output as ``-``). The error names both
    options and both paths: ``in.jsonl (output) is the same file as in.jsonl (input): ...``.
    """
    read = [(name, file) for name, given in inputs.items() for path in _paths(given) for file in _existing_files(path)]
    for output_name, given in outputs.items():
        for output in _paths(given):
            if not Path(output).is_file():
                continue
            for input_name, file in read:
                if _same_file(Path(output), file):
                    raise UsageError(
                        f"{output} ({output_name}) is the same file as {file} ({input_name}): writing it would "
                        "destroy that input; choose another output (nothing was written)"
                    )


def _paths(given: PathLike | Iterable[PathLike] | None) -> list[PathLike]:
    if given is None:
        return []
    if isinstance(given, (str, os.PathLike)):
        return [] if str(given) in ("", "-") else [given]
    return [path for path in given if str(path) not in ("", "-")]
