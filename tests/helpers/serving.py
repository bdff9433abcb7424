"""Helpers of the ``hiersum serve`` tests: a server subprocess on a free local port, started and waited for
(:mod:`hiersum.serving.client`), and the comparison of its answers with ``hiersum summarize``'s lines."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path
from typing import Any

from hiersum.serving.client import free_port, wait_until_healthy
from tests.helpers.cli import BIN, cli_env
from tests.helpers.paths import PROJECT_ROOT

GATES_VARIABLE = "HIERSUM_TEST_GATES"
"""The folder of the gates of a gated server (:mod:`tests.helpers.gated_serve`; inherited by its processes)."""
GATED = "gated-"
"""The prefix of the record ids a gated server holds until their gate opens."""
HELD_SUFFIX = ".held"
"""The file ``<gates>/<record id>.held``: the worker holds (or held) that request."""
START_SECONDS = 120
"""How long a server may take to answer /health (spawning the worker imports torch and loads the model)."""


def start_server(checkpoint: Path, run_dir: Path, *options: str, gates: Path | None = None
                 ) -> tuple[subprocess.Popen, str]:
    """``hiersum serve`` on ``checkpoint`` at a free port of 127.0.0.1, answering /health: (process, base URL).
    Its stdout and stderr go to ``run_dir/server.log``; it leads a process group of its own (the group of a
    terminal's Ctrl-C: ``os.killpg(process.pid, SIGINT)``). With ``gates`` (a folder), a request whose record id
    starts with ``gated-`` is held in the worker until the test opens its gate
    (:mod:`tests.helpers.gated_serve`)."""
    port = free_port()
    run_dir.mkdir(parents=True, exist_ok=True)
    # cli_env's one intra-op thread, as every console script the tests start (the serving tests took ~9% more CPU on
    # two): a decode of the tiny model is faster so
    env = cli_env()
    command = [str(BIN / "hiersum")]
    if gates is not None:
        gates.mkdir(parents=True, exist_ok=True)
        env[GATES_VARIABLE] = str(gates)
        command = [str(BIN / "python"), "-m", "tests.helpers.gated_serve"]
    with open(run_dir / "server.log", "w", encoding="utf-8") as log:  # the server writes on through its own copy
        process = subprocess.Popen(
            [*command, "serve", f"checkpoint={checkpoint}", f"port={port}", "log_level=warning",
             f"hydra.run.dir={run_dir}", *options],
            cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, process, timeout=START_SECONDS)
    except RuntimeError as error:
        stop_server(process)
        raise AssertionError(f"{error}:\n{server_log(run_dir)}") from None
    return process, url


def open_gate(gates: Path, record_id: str) -> None:
    """Let a gated server decode the request of ``record_id`` (now, or as soon as its worker takes it up)."""
    (gates / record_id).touch()


def held_in_the_worker(gates: Path) -> list[str]:
    """The record ids a gated server's worker has held so far (the requests reach it in the order the server got
    them, not the order they were sent in)."""
    return sorted(path.name.removesuffix(HELD_SUFFIX) for path in gates.glob(f"*{HELD_SUFFIX}"))


def server_log(run_dir: Path) -> str:
    return (run_dir / "server.log").read_text(encoding="utf-8")[-5000:]


def stop_server(process: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 60 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


SERVER_FIELDS = ("paragraphs", "model")
"""What an answer adds to the output line of ``hiersum summarize``."""


def as_summarize_line(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer less what the server adds: what ``hiersum summarize`` writes for the same record."""
    return {key: value for key, value in answer.items() if key not in SERVER_FIELDS}


def assert_same_lines(answers: list[dict[str, Any]], lines: list[dict[str, Any]]) -> None:
    """The answers are these summarize lines: the same fields and texts, the numbers equal to float rounding (a
    record decoded in another batch is padded otherwise, which moves the last bits of its scores and weights)."""
    assert len(answers) == len(lines)
    for answer, line in zip(answers, lines, strict=True):
        assert _same(as_summarize_line(answer), line), (answer, line)


def _same(mine: Any, theirs: Any) -> bool:
    if isinstance(mine, float) and isinstance(theirs, float):
        return math.isclose(mine, theirs, rel_tol=1e-4, abs_tol=1e-6)
    if isinstance(mine, dict) and isinstance(theirs, dict):
        return mine.keys() == theirs.keys() and all(_same(mine[key], theirs[key]) for key in mine)
    if isinstance(mine, list) and isinstance(theirs, list):
        return len(mine) == len(theirs) and all(_same(a, b) for a, b in zip(mine, theirs, strict=True))
    return type(mine) is type(theirs) and mine == theirs
