"""pytest's header says where the installed packages have lost their bytecode and Python writes none
(:mod:`tests.helpers.bytecode`): the suite then runs ~1.5x slower, and the line gives the command that mends it."""

from __future__ import annotations

import py_compile
import sys
from pathlib import Path

import pytest

from tests.helpers.bytecode import bytecode_header, without_bytecode


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An importable package ``hiersum_bytecode_probe`` with no bytecode (its ``__init__.py``)."""
    init = tmp_path / "hiersum_bytecode_probe" / "__init__.py"
    init.parent.mkdir()
    init.write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return init


def test_a_package_without_bytecode_is_named_until_it_is_compiled(package):
    assert without_bytecode(["hiersum_bytecode_probe", "hiersum_no_such_package"]) == ["hiersum_bytecode_probe"]
    py_compile.compile(str(package), doraise=True)  # where pip's install and compileall write it
    assert without_bytecode(["hiersum_bytecode_probe"]) == []
    assert "hiersum_bytecode_probe" not in sys.modules  # nothing imported


def test_the_header_line_only_where_python_writes_none(package, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    line = bytecode_header(["hiersum_bytecode_probe"])
    assert line.startswith("bytecode: none for hiersum_bytecode_probe and PYTHONDONTWRITEBYTECODE is set")
    assert f"{sys.executable} -m compileall -q -j 0 " in line and "\n" not in line
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # the first process to import it writes it
    assert bytecode_header(["hiersum_bytecode_probe"]) is None
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    py_compile.compile(str(package), doraise=True)
    assert bytecode_header(["hiersum_bytecode_probe"]) is None
