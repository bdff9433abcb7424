"""The locks (``requirements/lock-py3.X.txt``, written by ``make lock``) agree with ``pyproject.toml``.

``python scripts/check_lock.py`` checks, offline, that each lock pins every requirement of ``pyproject.toml``
(the core and every extra) and of ``requirements/lock.in`` that applies to its Python on Linux x86_64, at a
version inside the requirement's range, and that the locks cover the oldest Python ``requires-python`` admits
and none it refuses. ``python scripts/check_lock.py --installed`` checks that the running Python's
environment holds exactly its lock: each installed distribution at its locked version (a local label such as
torch's ``+cpu`` aside), none that the lock does not pin (pip and hiersum itself aside).
Each disagreement is one line; the exit status is 1 when there is any. ``make lock-check`` (CI) runs the first
and also compiles the locks again to compare; ``make ci-deps`` runs the second after installing.
"""

from __future__ import annotations

import argparse
import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser under its PyPI name (pytest's dependency there)
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
LOCK_NAME = re.compile(r"lock-py(\d+\.\d+)\.txt")
PLATFORM = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
            "implementation_name": "cpython", "platform_python_implementation": "CPython"}
"""The marker environment the locks are made for (``make lock``: ``--python-platform x86_64-manylinux_2_28``)."""
NOT_LOCKED = {"pip"}
"""Installed by ``python -m venv`` itself, not by the lock."""


def read_lock(path: Path) -> dict[str, str]:
    """``{canonical name: version}`` of the ``name==version`` lines of a lock (comments and ``# via`` lines skipped)."""
    pins = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement = Requirement(line)
        specifiers = list(requirement.specifier)
        if len(specifiers) != 1 or specifiers[0].operator != "==":
            raise ValueError(f"{path}:{number}: expected name==version, found {line!r}")
        pins[canonicalize_name(requirement.name)] = specifiers[0].version
    return pins


def requirements(project: Path) -> list[tuple[str, Requirement]]:
    """(where, requirement) of every requirement ``make lock`` compiles: ``pyproject.toml``'s dependencies and
    each extra's, then the lines of ``requirements/lock.in``."""
    table = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = [("dependencies", Requirement(line)) for line in table.get("dependencies", [])]
    for extra, lines in table.get("optional-dependencies", {}).items():
        found += [(f"extra {extra}", Requirement(line)) for line in lines]
    pins = project / "requirements" / "lock.in"
    for line in pins.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            found.append(("requirements/lock.in", Requirement(line)))
    return found


def applies(requirement: Requirement, python: str, where: str) -> bool:
    """Whether ``requirement``'s marker holds on Linux x86_64 under Python ``python`` (``3.12``)."""
    if requirement.marker is None:
        return True
    extra = where.removeprefix("extra ") if where.startswith("extra ") else ""
    environment = {**PLATFORM, "python_version": python, "python_full_version": f"{python}.0", "extra": extra}
    return requirement.marker.evaluate(environment)


def disagreements(project: Path) -> list[str]:
    """One line for each way the locks of ``project/requirements/`` and its ``pyproject.toml`` disagree."""
    requires_python = SpecifierSet(
        tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"])
    locks = {match.group(1): path for path in sorted((project / "requirements").glob("lock-py*.txt"))
             if (match := LOCK_NAME.fullmatch(path.name))}
    problems = [f"requirements/{path.name}: Python {python} is outside requires-python {requires_python}"
                for python, path in locks.items() if Version(python) not in requires_python]
    oldest = next((f"3.{minor}" for minor in range(0, 100) if Version(f"3.{minor}") in requires_python), None)
    if oldest is not None and oldest not in locks:
        problems.append(f"requirements/lock-py{oldest}.txt is missing: requires-python {requires_python} admits "
                        f"Python {oldest} (add it to LOCK_PYTHONS in the Makefile, then make lock)")
    own = canonicalize_name(tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"])
    wanted = [(where, requirement) for where, requirement in requirements(project)
              if canonicalize_name(requirement.name) != own]  # an extra naming others (hiersum[dev]) is no pin
    for python, path in locks.items():
        pins = read_lock(path)
        for where, requirement in wanted:
            if not applies(requirement, python, where):
                continue
            name = canonicalize_name(requirement.name)
            if name not in pins:
                problems.append(f"requirements/{path.name} pins no {requirement.name}, which {where} requires "
                                f"({requirement}): make lock")
            elif not requirement.specifier.contains(pins[name], prereleases=True):
                problems.append(f"requirements/{path.name} pins {requirement.name}=={pins[name]}, outside what "
                                f"{where} requires ({requirement}): make lock")
    return problems


def installed_disagreements(project: Path) -> list[str]:
    """One line for each installed distribution of this Python that its lock does not pin at that version."""
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    path = project / "requirements" / f"lock-py{python}.txt"
    if not path.is_file():
        return [f"requirements/{path.name} is missing: no lock for Python {python}"]
    pins = read_lock(path)
    own = canonicalize_name(tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"])
    problems = []
    for distribution in sorted(metadata.distributions(), key=lambda d: canonicalize_name(d.metadata["Name"])):
        name, version = canonicalize_name(distribution.metadata["Name"]), distribution.version
        if name in NOT_LOCKED or name == own:
            continue
        if name not in pins:
            problems.append(f"{name} {version} is installed, but requirements/{path.name} pins no {name}")
        elif Version(version).public != Version(pins[name]).public:
            problems.append(f"{name} {version} is installed, but requirements/{path.name} pins {pins[name]}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--installed", action="store_true",
                        help="check this Python's installed distributions against its lock instead")
    parser.add_argument("--project", type=Path, default=ROOT, help="the checkout (default: this script's)")
    args = parser.parse_args(argv)
    problems = installed_disagreements(args.project) if args.installed else disagreements(args.project)
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        what = (f"the installed distributions of Python {sys.version_info[0]}.{sys.version_info[1]} are its lock's"
                if args.installed else "the locks agree with pyproject.toml")
        print(f"check_lock: {what}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
