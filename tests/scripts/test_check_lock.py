"""scripts/check_lock.py: the committed locks agree with pyproject.toml, and each way they can stop agreeing (a new
requirement, a narrowed range, a Python added or dropped, an installed version that is not the locked one) is
reported."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "check_lock.py"
_spec = importlib.util.spec_from_file_location("check_lock", SCRIPT)
check_lock = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_lock)
THIS_PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"


def test_the_committed_locks_agree_with_pyproject() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=PROJECT_ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "check_lock: the locks agree with pyproject.toml\n"


def test_there_is_a_lock_for_this_python() -> None:
    assert (PROJECT_ROOT / "requirements" / f"lock-py{THIS_PYTHON}.txt").is_file()


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """A copy of the checkout's pyproject.toml and requirements/ (the locks and lock.in)."""
    shutil.copy(PROJECT_ROOT / "pyproject.toml", tmp_path)
    shutil.copytree(PROJECT_ROOT / "requirements", tmp_path / "requirements")
    return tmp_path


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_copy_agrees(project: Path) -> None:
    assert check_lock.disagreements(project) == []


def test_a_requirement_no_lock_pins_is_reported_for_each_lock(project: Path) -> None:
    edit(project / "pyproject.toml", '"mypy>=2.4"]', '"mypy>=2.4", "not-a-locked-package>=1"]')
    problems = check_lock.disagreements(project)
    locks = sorted(p.name for p in (project / "requirements").glob("lock-py*.txt"))
    assert problems == [f"requirements/{lock} pins no not-a-locked-package, which extra dev requires "
                        "(not-a-locked-package>=1): make lock" for lock in locks]


def test_a_range_the_pinned_version_leaves_is_reported(project: Path) -> None:
    edit(project / "pyproject.toml", '"torch>=2.2",', '"torch>=2.14",')
    problems = check_lock.disagreements(project)
    assert problems and all("pins torch==2.13.0, outside what dependencies requires (torch>=2.14): make lock" in p
                            for p in problems)


def test_a_pin_of_lock_in_is_checked_too(project: Path) -> None:
    edit(project / "requirements" / "lock.in", "torch==2.13.0", "torch==2.12.0")
    assert any("outside what requirements/lock.in requires (torch==2.12.0)" in p
               for p in check_lock.disagreements(project))


def test_a_requirement_for_another_python_only_is_not_asked_of_this_lock(project: Path) -> None:
    edit(project / "pyproject.toml", '"mypy>=2.4"]',
         '"mypy>=2.4", "not-a-locked-package>=1; python_version < \'3.0\'"]')
    assert check_lock.disagreements(project) == []


def test_the_oldest_admitted_python_needs_a_lock_and_a_refused_one_has_none(project: Path) -> None:
    oldest = min((p for p in (project / "requirements").glob("lock-py*.txt")),
                 key=lambda p: tuple(map(int, p.stem.removeprefix("lock-py").split("."))))
    oldest.unlink()
    assert check_lock.disagreements(project) == [
        f"requirements/{oldest.name} is missing: requires-python >=3.10 admits Python 3.10 (add it to LOCK_PYTHONS "
        "in the Makefile, then make lock)"]
    (project / "requirements" / "lock-py3.9.txt").write_text("", encoding="utf-8")
    assert "requirements/lock-py3.9.txt: Python 3.9 is outside requires-python >=3.10" in \
        check_lock.disagreements(project)


def test_a_lock_line_that_is_no_exact_pin_is_refused(tmp_path: Path) -> None:
    lock = tmp_path / "lock-py3.12.txt"
    lock.write_text("# a comment\nnumpy==2.0.0\n    # via x\nscipy>=1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"lock-py3.12.txt:4: expected name==version, found 'scipy>=1'"):
        check_lock.read_lock(lock)


def test_an_installed_version_other_than_the_locked_one_is_reported(project: Path) -> None:
    lock = project / "requirements" / f"lock-py{THIS_PYTHON}.txt"
    lock.write_text(re.sub(r"(?m)^pytest==\S+$", "pytest==0.0.1", lock.read_text(encoding="utf-8")), encoding="utf-8")
    assert f"pytest {pytest.__version__} is installed, but requirements/{lock.name} pins 0.0.1" in \
        check_lock.installed_disagreements(project)
    lock.write_text("", encoding="utf-8")
    assert f"pytest {pytest.__version__} is installed, but requirements/{lock.name} pins no pytest" in \
        check_lock.installed_disagreements(project)
