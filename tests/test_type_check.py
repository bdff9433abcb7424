"""mypy, as ``make lint`` runs it ([tool.mypy] of pyproject.toml), passes over ``hiersum/``; it reads the config
classes (a wrong use of one is reported); and the modules listed as left to type still have the errors listed.

mypy is a dev dependency (CI installs it): these tests require it rather than skip.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ERROR = re.compile(r"^(?P<path>[^:]+\.py):(?P<line>\d+): error: (?P<message>.*)  \[(?P<code>[a-z-]+)\]$")

WRONG_USES = '''from hiersum.config import Precision, SelectionOverrides, TrainerConfig

fine = SelectionOverrides(max_paragraphs=8, paragraphs=None).given()
precision: Precision = Precision("bf16")
SelectionOverrides(max_paragraphs="8")
SelectionOverrides(max_paragraph=8)
TrainerConfig(max_steps="10")
TrainerConfig(precison=precision)
'''
"""Lines 3-4 are right; 5-8 each use a config class wrongly (a field's type, a misspelt field)."""


def mypy(*arguments: str | Path, cache: Path) -> subprocess.CompletedProcess[str]:
    """``python -m mypy`` in the repository root (where pyproject.toml configures it), its cache in ``cache``."""
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache), *map(str, arguments)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900, check=False)


def seeded_cache(tmp_path: Path) -> Path:
    """A mypy cache for one test in ``tmp_path``: a copy of ``make lint``'s (``.mypy_cache`` in the root) where it
    exists, so that mypy rechecks only what changed since (its incremental mode: a module whose source, options or
    dependencies differ from the cached entry's is checked again, so the errors are those of a fresh cache); else
    empty. CI runs ``make lint`` before the tests; the two tests take ~10 s seeded against ~63 s cold
    (docs/development.md, "The suite's time")."""
    cache = tmp_path / "cache"
    if (ROOT / ".mypy_cache").is_dir():
        shutil.copytree(ROOT / ".mypy_cache", cache)
    return cache


def errors(output: str) -> list[re.Match[str]]:
    return [match for line in output.splitlines() if (match := ERROR.match(line))]


def test_mypy_reports_a_wrong_use_of_a_config_class(tmp_path):
    """A type checker sees each config class: a field's wrong type and a misspelt field are errors, the right uses
    (a ``Precision`` annotation, ``given()``) are not."""
    snippet = tmp_path / "wrong_config_use.py"
    snippet.write_text(WRONG_USES, encoding="utf-8")
    result = mypy(snippet, cache=seeded_cache(tmp_path))
    found = {(int(match["line"]), match["code"]) for match in errors(result.stdout)}
    assert found == {(5, "arg-type"), (6, "call-arg"), (7, "arg-type"), (8, "call-arg")}, result.stdout
    assert 'Unexpected keyword argument "max_paragraph" for "SelectionOverrides"' in result.stdout
    assert 'Argument "max_steps" to "TrainerConfig" has incompatible type "str"; expected "int"' in result.stdout


def _without_ledger(config: dict, path: Path) -> Path:
    """An INI copy of ``[tool.mypy]`` less the overrides that disable error codes in hiersum's own modules."""
    lines = ["[mypy]"] + [f"{key} = {_ini(value)}" for key, value in config.items() if key != "overrides"]
    for override in config.get("overrides", []):
        if "disable_error_code" not in override:
            modules = override["module"] if isinstance(override["module"], list) else [override["module"]]
            lines += [f"[mypy-{','.join(modules)}]"]
            lines += [f"{key} = {_ini(value)}" for key, value in override.items() if key != "module"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _ini(value: object) -> str:
    if isinstance(value, bool):
        return str(value)
    return ", ".join(value) if isinstance(value, list) else str(value)


@pytest.mark.slow
def test_mypy_passes_as_make_lint_runs_it_and_the_ledger_only_shrinks(tmp_path):
    """``mypy`` (no arguments: ``files`` of [tool.mypy]) finds nothing. Then, without the per-module
    ``disable_error_code`` entries of what is left to type, every module listed there still has every code listed:
    an entry whose errors were fixed must leave the list. (One test: the two runs share mypy's cache.)"""
    import tomllib  # Python 3.11+: the slow tests run on the CI's python3 (3.11)

    cache = seeded_cache(tmp_path)
    result = mypy(cache=cache)
    assert result.returncode == 0 and result.stdout.startswith("Success: no issues found"), result.stdout

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    ledger = {(module, code) for override in config["overrides"] if "disable_error_code" in override
              for module in override["module"] for code in override["disable_error_code"]}
    assert ledger, "no module is left to type: remove this half of the test"
    unchecked = mypy("--config-file", _without_ledger(config, tmp_path / "mypy.ini"), cache=cache)
    found = {(match["path"].removesuffix(".py").replace("/", "."), match["code"]) for match in errors(unchecked.stdout)}
    assert found, unchecked.stdout + unchecked.stderr
    assert sorted(ledger - found) == [], "these entries of [tool.mypy]'s overrides are no longer needed: remove them"
