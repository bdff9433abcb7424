"""hiersum.atomic: a file is replaced whole or not at all, fsynced, and no temporary file outlives a failure."""

from __future__ import annotations

import os
import stat

import pytest

from hiersum import atomic
from hiersum.atomic import write_atomically, write_bytes_atomically, write_text_atomically


def test_a_file_is_replaced_whole_and_its_folders_made(tmp_path):
    path = tmp_path / "a" / "b" / "out.json"
    assert write_text_atomically(path, "first\n") == path
    write_text_atomically(path, "é second\n")
    assert path.read_text(encoding="utf-8") == "é second\n"
    write_bytes_atomically(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in path.parent.iterdir()) == ["out.json"]


@pytest.mark.parametrize("failure", [OSError("disk full"), KeyboardInterrupt()], ids=["error", "ctrl-c"])
def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, failure):
    path = tmp_path / "out.txt"
    path.write_text("old", encoding="utf-8")

    def half_written(temporary):
        temporary.write_text("half", encoding="utf-8")
        raise failure

    with pytest.raises(type(failure)):
        write_atomically(path, half_written)
    assert path.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_the_file_is_fsynced_before_the_rename_and_the_folder_after(tmp_path, monkeypatch):
    path, events = tmp_path / "out.txt", []
    real_fsync, real_replace = atomic._fsync, os.replace
    monkeypatch.setattr(atomic, "_fsync", lambda p: (events.append(("fsync", p.name)), real_fsync(p)))
    monkeypatch.setattr(atomic.os, "replace", lambda a, b: (events.append(("replace", b.name)), real_replace(a, b)))
    write_text_atomically(path, "x")
    [(_, temporary), *rest] = events
    assert temporary.startswith(".out.txt.") and temporary.endswith(".tmp")
    assert rest == [("replace", "out.txt"), ("fsync", tmp_path.name)]


def test_the_new_file_has_the_permissions_of_a_plain_write(tmp_path):
    umask = os.umask(0o027)
    try:
        write_text_atomically(tmp_path / "out.txt", "x")
        (tmp_path / "plain.txt").write_text("x")
    finally:
        os.umask(umask)
    mode = stat.S_IMODE((tmp_path / "out.txt").stat().st_mode)
    assert mode == stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode) == 0o640
