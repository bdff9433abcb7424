"""Tests follow the device: every test file that builds a model, its tensors, a training or a decoding run takes
the ``device`` fixture of ``tests/conftest.py`` (``$HIERSUM_TEST_DEVICE``, cpu by default), itself or through a
fixture that follows it (``model``, ``batch``, ``tiny_cfg``, the CLI tests' ``trained`` run and its checkpoint), so
that ``make gpu-check``'s test part runs them on CUDA.

A file builds a model when it calls one of :data:`BUILDERS` by name; it follows the device when a function of it
(a test or a fixture) takes one of :data:`FOLLOWING` as a parameter. Every file does (issue 31, item 2): the last
ones, the comparisons with the official code's CPU outputs, run in full fp32 within a tolerance of their device
(:func:`tests.helpers.official.tolerance`)."""

from __future__ import annotations

import ast
import sys

from tests.helpers.paths import PROJECT_ROOT

BUILDERS = {"make_model", "make_batch", "ragged_batch", "module_and_batch", "network", "HierSum", "generate",
            "summarize_encoded", "train", "summarize", "evaluate", "fit"}
"""Calls that build a model or its tensors, or run a training or a decoding (the tests' helpers and hiersum's)."""

FOLLOWING = {"device", "model", "batch", "tiny_cfg", "trained", "trained_run", "checkpoint"}
"""The ``device`` fixture and the fixtures that depend on it."""


def files_without_the_device() -> set[str]:
    """The test files that call a builder and take no fixture of :data:`FOLLOWING`."""
    found = set()
    for path in sorted((PROJECT_ROOT / "tests").rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = {node.func.id for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
        parameters = {argument.arg for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
                      for argument in node.args.args}
        if calls & BUILDERS and not parameters & FOLLOWING:
            found.add(path.relative_to(PROJECT_ROOT).as_posix())
    return found


def test_every_test_file_that_builds_a_model_takes_the_device():
    missing = files_without_the_device()
    assert not missing, f"test files that build a model without the device fixture: {sorted(missing)}"


def test_the_check_finds_a_file_without_the_device(tmp_path, monkeypatch):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text("def test_x():\n    make_model().encode(1)\n", encoding="utf-8")
    (tests / "test_b.py").write_text("def test_y(device):\n    make_model(device=device)\n", encoding="utf-8")
    (tests / "test_c.py").write_text("def test_z(model):\n    model.train()\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "PROJECT_ROOT", tmp_path)
    assert files_without_the_device() == {"tests/test_a.py"}
