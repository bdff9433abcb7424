"""hiersum.atomic: a file or a folder is replaced whole or not at all, and no temporary outlives a failure; a file
is fsynced."""

from __future__ import annotations

import os
import stat

import pytest

from hiersum import atomic
from hiersum.atomic import publishing_directory, write_atomically, write_bytes_atomically, write_text_atomically


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


def _publish(target, text, **options):
    with publishing_directory(target, **options) as temporary:
        (temporary / "a.txt").write_text(text)
        assert temporary.parent == target.parent and temporary.name.endswith(".tmp")


def test_a_folder_is_published_whole_with_the_permissions_of_a_plain_mkdir(tmp_path):
    umask = os.umask(0o027)
    try:
        _publish(tmp_path / "out", "first")
        (tmp_path / "plain").mkdir()
    finally:
        os.umask(umask)
    assert (tmp_path / "out" / "a.txt").read_text() == "first"
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == stat.S_IMODE((tmp_path / "plain").stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "plain"]


@pytest.mark.parametrize("failure", [OSError("disk full"), KeyboardInterrupt()], ids=["error", "ctrl-c"])
def test_a_failed_publication_leaves_the_earlier_folder_and_no_temporary(tmp_path, failure):
    _publish(tmp_path / "out", "old")
    with pytest.raises(type(failure)), publishing_directory(tmp_path / "out") as temporary:
        (temporary / "a.txt").write_text("half")
        raise failure
    assert (tmp_path / "out" / "a.txt").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_an_existing_folder_is_replaced_or_kept(tmp_path):
    target = tmp_path / "out"
    _publish(target, "old")
    (target / "extra.txt").write_text("x")
    _publish(target, "new")
    assert sorted(p.name for p in target.iterdir()) == ["a.txt"] and (target / "a.txt").read_text() == "new"
    _publish(target, "ours", if_exists="keep")  # another process published it first: theirs is kept
    assert (target / "a.txt").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_the_leftovers_of_a_killed_publication_are_removed_on_request(tmp_path):
    stale = tmp_path / ".out.123-abcd.tmp"
    stale.mkdir()
    _publish(tmp_path / "out", "x")
    assert stale.is_dir()  # not without a lock: it may be another process's publication in progress
    _publish(tmp_path / "out", "x", remove_stale=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
