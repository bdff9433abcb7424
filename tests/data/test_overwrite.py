"""An output that is an input is refused whatever path names it (:mod:`hiersum.data.overwrite`)."""

from __future__ import annotations

import os

import pytest

from hiersum.data.overwrite import refuse_overwriting_inputs
from hiersum.errors import UsageError


@pytest.fixture()
def source(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": "a"}\n', encoding="utf-8")
    return path


def test_the_same_path_is_refused_naming_both_options(source):
    with pytest.raises(UsageError, match=r"in\.jsonl \(output\) is the same file as .*in\.jsonl \(input\)"):
        refuse_overwriting_inputs({"output": str(source)}, {"input": str(source)})


@pytest.mark.parametrize("alias", ["relative", "symlink", "hard link", "dot segments"])
def test_another_name_of_the_same_file_is_refused(source, tmp_path, monkeypatch, alias):
    if alias == "relative":
        monkeypatch.chdir(tmp_path)
        output = "in.jsonl"
    elif alias == "symlink":
        output = tmp_path / "link.jsonl"
        output.symlink_to(source)
    elif alias == "hard link":
        output = tmp_path / "hard.jsonl"
        os.link(source, output)
    else:
        (tmp_path / "sub").mkdir()
        output = f"{tmp_path}/sub/../in.jsonl"
    with pytest.raises(UsageError, match="destroy that input"):
        refuse_overwriting_inputs({"output": output}, {"input": source})


def test_a_file_of_an_input_folder_is_refused(tmp_path):
    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "a.txt").write_text("one paragraph\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"a\.txt \(output\)"):
        refuse_overwriting_inputs({"output": folder / "a.txt"}, {"input": folder})
    refuse_overwriting_inputs({"output": folder / "out.jsonl"}, {"input": folder})  # a new file in it is not an input


def test_distinct_new_missing_and_stdio_paths_pass(source, tmp_path):
    other = tmp_path / "other.jsonl"
    other.write_text(source.read_text(), encoding="utf-8")  # equal content, another file
    refuse_overwriting_inputs({"output": other, "errors": tmp_path / "new.jsonl"},
                              {"input": source, "checkpoint": None, "stdin": "-", "list": [tmp_path / "missing"]})
    refuse_overwriting_inputs({"output": "-"}, {"input": source})


def test_every_output_is_checked_against_every_input(source, tmp_path):
    checkpoint = tmp_path / "model.ckpt"
    checkpoint.write_bytes(b"weights")
    with pytest.raises(UsageError, match=r"model\.ckpt \(the errors file\) is the same file as .*\(checkpoint\)"):
        refuse_overwriting_inputs({"output": tmp_path / "out.jsonl", "the errors file": checkpoint},
                                  {"input": [source], "checkpoint": checkpoint})
