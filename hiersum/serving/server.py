"""``hiersum serve`` (:func:`serve`): the checkpoint checked in this process, then LitServe's server: one
inference worker per device (:class:`hiersum.serving.api.SummarizeAPI`), an HTTP process whose requests are
checked before they are queued (:class:`hiersum.serving.api.RequestChecks`), the page at ``/``, ``/metrics``
(:mod:`hiersum.serving.metrics`), and LitServe's ``/health``, ``/info`` and OpenAPI (``/docs``) endpoints, with
LitServe's key check (``X-API-Key``) on all but ``/health`` and the page when a key is set (:func:`server_key`).

Stopping: SIGTERM and Ctrl-C (SIGINT, which a terminal sends to every process of the group) raise a
:class:`hiersum.errors.Terminated` in this process, on which LitServe stops its HTTP process gracefully, so the
requests in flight are answered before the workers stop; then :func:`serve` returns. The processes it forked
ignore SIGINT and leave the stopping to it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.resources
import multiprocessing
import os
import signal
import socket
import sys
import tempfile
from collections.abc import Collection
from dataclasses import replace
from typing import Any

import litserve
from fastapi import Depends, Request
from fastapi.exception_handlers import http_exception_handler
from starlette.exceptions import HTTPException
from starlette.responses import HTMLResponse, JSONResponse, Response

from hiersum.config import ServeConfig
from hiersum.errors import Terminated, UsageError
from hiersum.inference.pipeline import checked_device, load_summarizer
from hiersum.private_apis import KeepsServerSockets
from hiersum.serving.api import API_PATH, RequestChecks, SummarizeAPI
from hiersum.serving.schema import summarize_operation

MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus_client's folder of the server's processes' metrics (:mod:`hiersum.serving.metrics`)."""

USAGE = "hiersum serve checkpoint=CKPT [host=127.0.0.1 port=8000]"
PAGE = "index.html"
"""The page at ``/`` (package data of :mod:`hiersum.serving`, in ``static/``)."""


def page() -> str:
    """The HTML of the page at ``/`` (plain HTML and a little JavaScript: nothing to build)."""
    return importlib.resources.files("hiersum.serving").joinpath("static").joinpath(PAGE).read_text(encoding="utf-8")


KEY_VARIABLE = "LIT_SERVER_API_KEY"
"""The environment variable LitServe reads its key from (``api_key=`` takes precedence)."""
KEY_HEADER = "X-API-Key"
"""The header LitServe reads the key from."""
LOOPBACK = "127.0.0.1"


def server_key(cfg: ServeConfig) -> str | None:
    """The key of ``cfg`` (``api_key``, else ``LIT_SERVER_API_KEY``), or None; a host other than 127.0.0.1
    without one (and without ``allow_unauthenticated``) is a :class:`hiersum.errors.UsageError`."""
    key = cfg.api_key or os.environ.get(KEY_VARIABLE) or None
    if key is None and cfg.host != LOOPBACK and not cfg.allow_unauthenticated:
        raise UsageError(f"host={cfg.host} would serve anyone who can reach this machine without a key: set "
                         f"api_key=KEY (or the environment variable {KEY_VARIABLE}), or allow_unauthenticated=true")
    return key


class Server(KeepsServerSockets, litserve.LitServer):
    """LitServe's server, which also keeps the listening sockets it binds in this process (:attr:`sockets`), so
    that a stop can shut them down: the kernel then refuses new connections at once. Closing them would not do:
    LitServe's manager process, forked after they are bound, holds them open, and new connections would wait in
    their queue, accepted by nobody, until the drain ends."""

    sockets: list[socket.socket] = []
    """The listening sockets, kept as LitServe binds them (:class:`hiersum.private_apis.KeepsServerSockets`)."""


def build_server(cfg: ServeConfig, *, key: str | None = None) -> Server:
    """LitServe's server of ``cfg`` (not started); with ``key``, every route but ``/health`` and the page
    requires it in ``X-API-Key`` (LitServe's check)."""
    litserve.server.LIT_SERVER_API_KEY = key  # what LitServe's check compares X-API-Key with (read on each request)
    middleware = (RequestChecks, {"path": API_PATH, "max_body_bytes": cfg.max_body_bytes, "defaults": cfg.decode,
                                  "limits": cfg.limits, "timeout": cfg.timeout, "max_queue": cfg.max_queue,
                                  "queued": multiprocessing.Value("i", 0)})
    server = Server(SummarizeAPI(cfg), accelerator=str(cfg.accelerator), devices=cfg.devices,
                    workers_per_device=cfg.workers_per_device, timeout=cfg.timeout, middlewares=[middleware])
    server.uvicorn_graceful_timeout = cfg.shutdown_timeout  # how long LitServe's HTTP process may finish requests
    html = page()
    routes = server.app.router.routes
    health = next(route for route in routes if getattr(route, "path", None) == server.healthcheck_path)
    routes[:] = [route for route in routes if getattr(route, "path", None) not in ("/", server.healthcheck_path)]
    server.app.add_api_route("/", lambda: HTMLResponse(html), methods=["GET"], include_in_schema=False)
    server.app.add_api_route(server.healthcheck_path, health.endpoint, methods=["GET"])  # open to a load balancer
    server.app.add_api_route("/metrics", _metrics, methods=["GET"], dependencies=[Depends(server.setup_auth())],
                             include_in_schema=False)
    summarize = next(route for route in routes if getattr(route, "path", None) == API_PATH)
    summarize.openapi_extra = summarize_operation(cfg.limits)  # its body and answers, in /openapi.json
    server.app.add_exception_handler(HTTPException, _refusal)
    return server


async def _refusal(request: Request, error: HTTPException) -> Response:
    """LitServe's 401 (no key, or another key) as ``{"error": one line}``, as every refusal of the server; any
    other HTTP error as FastAPI answers it."""
    if error.status_code != 401:
        return await http_exception_handler(request, error)
    found = "another key" if request.headers.get(KEY_HEADER) else "none"
    return JSONResponse({"error": f"header '{KEY_HEADER}': expected the server's key, found {found}"},
                        status_code=401, headers=error.headers)


def _metrics() -> Response:
    from hiersum.serving import metrics  # after PROMETHEUS_MULTIPROC_DIR is set (in the HTTP process)

    text, content_type = metrics.scrape()
    return Response(text, media_type=content_type)


def checked_serve_config(cfg: ServeConfig, decode_given: Collection[str] | None = None) -> ServeConfig:
    """``cfg`` once its checkpoint is checked here (a worker that fails to load says it less clearly): it loads on
    the device, carries a tokenizer and its paragraph selection is valid; with ``decode_given``, the requests'
    defaults (in the HTTP process's checks and in each worker) are the checkpoint's recorded search settings but for
    those fields."""
    checked_device("cuda" if cfg.accelerator == "cuda" else "cpu", str(cfg.precision))
    summarizer = load_summarizer(cfg.checkpoint)  # on the CPU: this process decodes nothing (each worker loads)
    summarizer.selection(cfg)
    return replace(cfg, decode=summarizer.decoding(cfg.decode, decode_given))


def serve(cfg: ServeConfig, decode_given: Collection[str] | None = None) -> None:
    """Serve ``cfg.checkpoint`` until Ctrl-C or SIGTERM (see the module docstring); a checkpoint that does not
    load is a :class:`hiersum.errors.UsageError` before anything starts (``hiersum serve`` turns its composed
    config into ``cfg``, a bad option a usage error there). ``decode_given``: the ``decode`` fields the command
    line gave; the other defaults of a request are the search settings the checkpoint's training run recorded,
    where it recorded them (None: ``cfg.decode`` whole)."""
    key = server_key(cfg)
    cfg = checked_serve_config(cfg, decode_given)
    with tempfile.TemporaryDirectory(prefix="hiersum-serve-metrics-") as folder:
        os.environ[MULTIPROCESS_DIR] = folder  # read by prometheus_client in each process of the server
        server = build_server(cfg, key=key)
        print(f"serving {cfg.checkpoint} on http://{cfg.host}:{cfg.port} (page /, POST {API_PATH}, /health, /metrics, "
              f"/docs{'; X-API-Key required' if key else ''}); Ctrl-C or SIGTERM stops after answering the requests "
              "in flight", file=sys.stderr, flush=True)
        stop = functools.partial(_on_stop_signal, os.getpid(), server)
        previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}
        try:
            server.run(host=str(cfg.host), port=cfg.port, log_level=str(cfg.log_level), generate_client_file=False)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            os.environ.pop(MULTIPROCESS_DIR, None)
    print("hiersum serve: stopped", file=sys.stderr)


def _on_stop_signal(main_pid: int, server: Server, signum: int, _frame: Any) -> None:
    """In this process, the listening sockets shut down (new connections are refused at once) and
    :class:`Terminated` (LitServe's graceful stop) for SIGTERM and SIGINT alike. In a process forked from it that
    kept the handler: SIGINT is ignored (Ctrl-C in a terminal signals every process of the
    group at once; this process stops them in order), SIGTERM takes its default action (LitServe's HTTP process,
    once uvicorn has stopped, raises it again; the workers are stopped with it)."""
    if os.getpid() == main_pid:
        for listening in server.sockets:  # shared with LitServe's HTTP and manager processes: shut for all
            with contextlib.suppress(OSError):
                listening.shutdown(socket.SHUT_RDWR)
            listening.close()
        raise Terminated()
    if signum == signal.SIGINT:
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
