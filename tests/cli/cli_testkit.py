"""Helpers of the CLI tests: run an installed console script, the tiny training overrides."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import PROJECT_ROOT, TINY_OVERRIDES

BIN = Path(sys.executable).parent


def cli_env() -> dict[str, str]:
    return {**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning"}


def run_cli(name: str, args: list[str], *, cwd: Path = PROJECT_ROOT, check: bool = True, timeout: int = 600,
            stdin: str | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run([str(BIN / name), *args], cwd=cwd, capture_output=True, text=True,
                            timeout=timeout, env=cli_env(), input=stdin)
    if check and result.returncode != 0:
        raise AssertionError(f"{name} failed ({result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}")
    return result


def train_args(corpus: Path, run_dir: Path, *extra: str) -> list[str]:
    return [*TINY_OVERRIDES, f"data.path={corpus}", f"hydra.run.dir={run_dir}", "logger=csv", *extra]
