"""``hiersum serve`` (:func:`serve`): the checkpoint checked in this process, then LitServe's server: one
inference worker per device (:class:`hiersum.serving.api.SummarizeAPI`), an HTTP process whose requests are
checked before they are queued (:class:`hiersum.serving.api.RequestChecks`), the page at ``/``, and LitServe's
``/health``, ``/info`` and OpenAPI (``/docs``) endpoints.

Stopping: SIGTERM and Ctrl-C (SIGINT, which a terminal sends to every process of the group) raise a
:class:`hiersum.config.Terminated` in this process, on which LitServe stops its HTTP process gracefully, so the
requests in flight are answered before the workers stop; then :func:`serve` returns. The processes it forked
ignore SIGINT and leave the stopping to it.
"""

from __future__ import annotations

import functools
import importlib.resources
import os
import signal
import sys
from typing import Any

import litserve
from omegaconf import DictConfig
from starlette.responses import HTMLResponse

from hiersum.commands.common import checked_device, checkpoint_tokenizer, load_checkpoint
from hiersum.commands.summarize import record_selection
from hiersum.config import ServeConfig, Terminated, command_config
from hiersum.serving.api import API_PATH, RequestChecks, SummarizeAPI

USAGE = "hiersum serve checkpoint=CKPT [host=127.0.0.1 port=8000]"
PAGE = "index.html"
"""The page at ``/`` (package data of :mod:`hiersum.serving`, in ``static/``)."""


def page() -> str:
    """The HTML of the page at ``/`` (plain HTML and a little JavaScript: nothing to build)."""
    return importlib.resources.files("hiersum.serving").joinpath("static", PAGE).read_text(encoding="utf-8")


def build_server(cfg: ServeConfig) -> litserve.LitServer:
    """LitServe's server of ``cfg`` (not started)."""
    middleware = (RequestChecks, {"path": API_PATH, "max_body_bytes": cfg.max_body_bytes, "defaults": cfg.decode,
                                  "limits": cfg.limits})
    server = litserve.LitServer(SummarizeAPI(cfg), accelerator=cfg.accelerator, devices=cfg.devices,
                                workers_per_device=cfg.workers_per_device, timeout=cfg.timeout,
                                middlewares=[middleware])
    server.uvicorn_graceful_timeout = cfg.shutdown_timeout  # how long LitServe's HTTP process may finish requests
    html = page()
    routes = server.app.router.routes
    routes[:] = [route for route in routes if getattr(route, "path", None) != "/"]  # LitServe's "litserve running"
    server.app.add_api_route("/", lambda: HTMLResponse(html), methods=["GET"], include_in_schema=False)
    return server


def serve(cfg: ServeConfig | DictConfig) -> None:
    """Serve ``cfg.checkpoint`` until Ctrl-C or SIGTERM (see the module docstring); a checkpoint that does not
    load, or a bad option, is a :class:`hiersum.config.UsageError` before anything starts."""
    cfg = command_config(cfg, ServeConfig, usage=USAGE)
    checked_device("cuda" if cfg.accelerator == "cuda" else "cpu", cfg.precision)
    summarizer = load_checkpoint(cfg.checkpoint)  # checked here: a worker that fails to load says it less clearly
    checkpoint_tokenizer(summarizer, cfg.checkpoint)
    record_selection(cfg, summarizer)
    del summarizer
    server = build_server(cfg)
    print(f"serving {cfg.checkpoint} on http://{cfg.host}:{cfg.port} (page /, POST {API_PATH}, /health, /docs); "
          "Ctrl-C or SIGTERM stops after answering the requests in flight", file=sys.stderr, flush=True)
    stop = functools.partial(_on_stop_signal, os.getpid())
    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.run(host=cfg.host, port=cfg.port, log_level=cfg.log_level, generate_client_file=False)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    print("hiersum serve: stopped", file=sys.stderr)


def _on_stop_signal(main_pid: int, signum: int, _frame: Any) -> None:
    """In this process, :class:`Terminated` (LitServe's graceful stop) for SIGTERM and SIGINT alike. In a process
    forked from it that kept the handler: SIGINT is ignored (Ctrl-C in a terminal signals every process of the
    group at once; this process stops them in order), SIGTERM takes its default action (LitServe's HTTP process,
    once uvicorn has stopped, raises it again; the workers are stopped with it)."""
    if os.getpid() == main_pid:
        raise Terminated()
    if signum == signal.SIGINT:
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
