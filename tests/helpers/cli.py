"""Helpers of the CLI tests: run an installed console script (the tests where the process matters),
or an entry point's ``main`` in process (options that Hydra refuses before the task starts)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hiersum.cli import common
from hiersum.cli.main import main
from tests.helpers.config import train_overrides
from tests.helpers.paths import PROJECT_ROOT

BIN = Path(sys.executable).parent


def cli_env() -> dict[str, str]:
    """The environment of a console script: ``tests`` importable (for :mod:`tests.helpers.probes`), and one
    intra-op thread, as the tests' own process (``tests/conftest.py`` ``single_thread``): the tiny model is
    fastest so, and the processes of two pytest-xdist workers (DDP ranks among them) do not spin OpenMP threads
    against each other on the cores."""
    return {**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning", "PYTHONPATH": str(PROJECT_ROOT),
            "OMP_NUM_THREADS": "1"}


def run_cli(name: str, args: list[str], *, cwd: Path = PROJECT_ROOT, check: bool = True, timeout: int = 600,
            stdin: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the console script ``name`` (in the environment :func:`cli_env` and ``env``)."""
    result = subprocess.run([str(BIN / name), *args], cwd=cwd, capture_output=True, text=True,
                            timeout=timeout, env={**cli_env(), **(env or {})}, input=stdin)
    if check and result.returncode != 0:
        raise AssertionError(f"{name} failed ({result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}")
    return result


def train_args(corpus: Path, run_dir: Path, *extra: str) -> list[str]:
    """``hiersum-train`` arguments of a tiny run in ``run_dir``."""
    return [*train_overrides(corpus, *extra), f"hydra.run.dir={run_dir}"]


def assert_usage_error(returncode: int, stderr: str, *expected: str) -> None:
    """Exit status 2 and one line on stderr (no traceback) holding every ``expected`` text."""
    assert returncode == 2, stderr
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr, stderr
    for text in expected:
        assert text in stderr, stderr


class TaskStarted(BaseException):
    """Raised where the task of an entry point would start (not an ``Exception``: nothing reports it)."""


def run_main(action: str, args: list[str], monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """(exit status, stderr) of the ``hiersum-<action>`` script (:func:`hiersum.cli.main.main` as that script)
    run in process with ``args`` as its command line, for options that Hydra refuses: should Hydra accept them,
    the task does not run (:class:`TaskStarted` is raised) and Hydra configures no logging of this process."""

    def task(prog: str):
        raise TaskStarted(f"{prog} {args}: Hydra composed the config")

    monkeypatch.setattr(common, "task", task)
    monkeypatch.setattr(sys, "argv", [alias(action), *args, "hydra/job_logging=none", "hydra/hydra_logging=none"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    return exit_info.value.code, capsys.readouterr().err


def console_scripts() -> dict[str, str]:
    """The ``[project.scripts]`` of pyproject.toml, ``{name: "module:function"}`` (no tomllib before Python 3.11)."""
    text = (PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[project.scripts]\n", 1)[1].split("\n[", 1)[0]
    return dict(re.findall(r'^([\w-]+) = "([^"]+)"$', section, flags=re.M))


def alias(action: str) -> str:
    """The console script of ``action``: ``hiersum-<action>``."""
    return f"hiersum-{action}"
