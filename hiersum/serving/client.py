"""A minimal client of ``hiersum serve`` on the standard library (``urllib``): what the load benchmark
(``scripts/bench_serve.py``) and the tests use to talk to a server they started."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from typing import Any


def free_port(host: str = "127.0.0.1") -> int:
    """A port of ``host`` that nothing listens on now (LitServe takes ports from 1024 up: so does the kernel)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def post_json(url: str, body: bytes | dict[str, Any], *, timeout: float = 120, key: str | None = None
              ) -> tuple[int, dict[str, Any]]:
    """(status, JSON answer) of a POST of ``body`` to ``url`` (a dict is sent as JSON), with ``key`` in
    ``X-API-Key`` if given."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
    headers = {"Content-Type": "application/json", **({"X-API-Key": key} if key else {})}
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def wait_until_healthy(url: str, process: subprocess.Popen, *, timeout: float) -> None:
    """Wait until the server at ``url`` (run by ``process``) answers ``/health`` with 200; a ``RuntimeError``
    if ``process`` exits first or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"hiersum serve exited with status {process.returncode} before answering /health")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"hiersum serve did not answer {url}/health within {timeout:.0f} s")


def call_asgi(app: Any, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
              ) -> tuple[int, bytes]:
    """(status, body) of one request to the ASGI ``app`` (the server's FastAPI app) in this process, without a
    network or the app's start-up (its workers): for the routes that answer without them."""
    return asyncio.run(asgi_request(app, method, path, headers, body))


async def asgi_request(app: Any, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
                       ) -> tuple[int, bytes]:
    """:func:`call_asgi` in a running event loop."""
    sent = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "path": path,
             "raw_path": path.encode(), "root_path": "", "scheme": "http", "query_string": b"",
             "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5000),
             "headers": [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()]}
    await app(scope, receive, send)
    return sent[0]["status"], b"".join(message.get("body", b"") for message in sent[1:])
