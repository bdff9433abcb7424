"""Helpers of the CLI tests: run an installed console script (the tests where the process matters), a console
script's ``main`` in process as that script (:func:`run_in_process`: exit status, stdout and stderr, without the
2.5-7 s of imports a new process pays), or an entry point's ``main`` in process stopped before its task
(:func:`run_main`: options that Hydra refuses before the task starts)."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import traceback
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Ran:
    """What a command run in process by :func:`run_in_process` left: the fields of ``subprocess.CompletedProcess``
    that the tests read."""

    returncode: int
    stdout: str
    stderr: str


HYDRA_LOGGING_OFF = ["hydra/job_logging=none", "hydra/hydra_logging=none"]
"""Overrides that keep Hydra from configuring the logging of the tests' process (its handlers would hold pytest's
captured streams); in a console script Hydra logs to stdout and the run's log file, never to stderr."""


def run_in_process(name: str, args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                   *, stdin: str | None = None, env: dict[str, str] | None = None) -> Ran:
    """Run the console script ``name`` (``hiersum`` or ``hiersum-<action>`` of a Hydra action) with ``args``, as
    :func:`run_cli` with ``check=False``, but in this process: :func:`hiersum.cli.main.main` with ``sys.argv`` the
    script's command line (:data:`HYDRA_LOGGING_OFF` added), ``stdin`` its standard input and ``env`` added to its
    environment. The exit status is the interpreter's: that of ``SystemExit``, 0 on return, 1 and the traceback
    on stderr for an exception that escapes ``main`` (as with ``HYDRA_FULL_ERROR=1``). Output the test printed
    before is dropped."""
    for key, value in (env or {}).items():
        monkeypatch.setenv(key, value)
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    monkeypatch.setattr(sys, "argv", [str(BIN / name), *args, *HYDRA_LOGGING_OFF])
    capsys.readouterr()
    returncode, escaped = 0, ""
    try:
        main()
    except SystemExit as exiting:
        returncode = exiting.code if isinstance(exiting.code, int) else 0 if exiting.code is None else 1
        if isinstance(exiting.code, str):
            print(exiting.code, file=sys.stderr)
    except Exception as error:  # what the interpreter does with it: the traceback on stderr, exit status 1
        returncode, escaped = 1, "".join(traceback.format_exception(error))
    out, err = capsys.readouterr()
    return Ran(returncode, out, err + escaped)


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
