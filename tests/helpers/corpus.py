"""The tiny corpus of the suite (the first lines of each sample split) and its variants."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.paths import SAMPLE_DIR

SPLITS = ("train", "validation", "test")
TINY_SIZES = {"train": 40, "validation": 8, "test": 8}
"""Examples of each split of the tiny corpus."""


def write_tiny_corpus(folder: Path) -> Path:
    """The first lines of each sample split (:data:`TINY_SIZES`) as native JSONL files in ``folder``."""
    for split, n in TINY_SIZES.items():
        with open(SAMPLE_DIR / f"{split}.jsonl", encoding="utf-8") as source:
            lines = [next(source) for _ in range(n)]
        (folder / f"{split}.jsonl").write_text("".join(lines), encoding="utf-8")
    return folder


def copy_corpus(source: Path, target: Path) -> Path:
    """The three split files of ``source`` copied into the new folder ``target``."""
    target.mkdir()
    for split in SPLITS:
        (target / f"{split}.jsonl").write_bytes((source / f"{split}.jsonl").read_bytes())
    return target


def write_with_bad_validation_line(source: Path, target: Path) -> Path:
    """A copy of ``source`` whose validation line 3 has a number for its summary."""
    copy_corpus(source, target)
    lines = (target / "validation.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    record = json.loads(lines[2])
    record["summary"] = 42
    lines[2] = json.dumps(record) + "\n"
    (target / "validation.jsonl").write_text("".join(lines), encoding="utf-8")
    return target


def write_sample_records(path: Path, count: int) -> Path:
    """The first ``count`` records of the sample corpus's test split, written to ``path`` (an input to summarize)."""
    lines = (SAMPLE_DIR / "test.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:count]
    path.write_text("".join(lines), encoding="utf-8")
    return path
