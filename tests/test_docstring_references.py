"""Every ``hiersum/...`` path and every ``hiersum.<module>[.<name>]`` a docstring of the package names exists: a
renamed module or a moved function leaves no docstring pointing at nothing (``hiersum/model/copy.py`` outlived its
rename to ``copy_attention.py`` by a day)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.helpers.names import resolve

ROOT = Path(__file__).resolve().parents[1]
PATH = re.compile(r"(?<![\w/.$])hiersum/[\w/]+(?:\.py)?")
"""A path into the package (a module file or a folder); ``~/.cache/hiersum/prepared`` is not one."""
REFERENCE = re.compile(r"(?<![\w{.$])hiersum(?:\.\w+)+")
"""A dotted name under the package; ``${hiersum.run_name:...}`` (an OmegaConf resolver) is not one."""
NOT_IN_THE_PACKAGE = {
    "hiersum.tokenizer_json": "a checkpoint's key (checkpoint['hiersum']['tokenizer_json'])",
    "hiersum/conf": "the Hydra configs' folder inside an installed wheel (conf/ in a checkout)",
}
"""Names that look like the package's but name something else, and what."""


def docstrings(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string that stands alone as a statement: module, class and function docstrings and the
    attribute docstrings under fields."""
    return [(node.lineno, node.value.value) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)]


def path_exists(path: str) -> bool:
    target = ROOT / path
    return target.exists() or target.with_suffix(".py").exists()


def annotated(cls: type, name: str) -> bool:
    """``name`` is a field declared on ``cls`` or a base (a dataclass field without a default, an annotated
    attribute): it exists on instances, not on the class."""
    return any(name in vars(base).get("__annotations__", {}) for base in cls.__mro__)


def reference_exists(name: str) -> bool:
    """``name`` is an importable module, a chain of attributes on one, or a field declared on the class it ends at."""
    try:
        resolve(name)
        return True
    except (AttributeError, ModuleNotFoundError):
        owner_name, _, field = name.rpartition(".")
    try:
        owner = resolve(owner_name) if owner_name else None
    except (AttributeError, ModuleNotFoundError):
        return False
    return isinstance(owner, type) and annotated(owner, field)


def dangling(source: str, module: str) -> list[str]:
    """``module:line: name`` of each path or dotted name in ``source``'s docstrings that does not exist."""
    found = []
    for line, text in docstrings(source):
        found += [f"{module}:{line}: {path}" for path in PATH.findall(text)
                  if path not in NOT_IN_THE_PACKAGE and not path_exists(path)]
        found += [f"{module}:{line}: {name}" for name in REFERENCE.findall(text)
                  if name not in NOT_IN_THE_PACKAGE and not reference_exists(name)]
    return found


def test_every_path_and_name_a_docstring_gives_exists():
    problems = []
    for file in sorted((ROOT / "hiersum").rglob("*.py")):
        problems += dangling(file.read_text(), str(file.relative_to(ROOT)))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("docstring, kind", [
    ("(``hiersum/model/copy.py``)", "a renamed module file"),
    (":mod:`hiersum.model.copy`", "a renamed module"),
    (":func:`hiersum.training.loss.smoothed_copy_nll`", "a function that is not there"),
    (":attr:`hiersum.model.copy_attention.CopyMemory.keyz`", "a field that is not there"),
])
def test_a_dangling_reference_is_found(docstring, kind):
    source = f'"""The copy attention {docstring}."""\n'
    assert dangling(source, "m.py"), kind


def test_existing_modules_names_fields_and_resolvers_pass():
    source = ('"""See ``hiersum/model/copy_attention.py``, :mod:`hiersum.model`,'
              ' :func:`hiersum.training.loss.copy_nll`,'
              ' :attr:`hiersum.model.copy_attention.CopyMemory.copyable` (a field),'
              ' ``${hiersum.sample_dir:DIR}``."""\n')
    assert dangling(source, "m.py") == []
