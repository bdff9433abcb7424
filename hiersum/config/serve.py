"""The config of ``hiersum serve``: the HTTP service, its limits and its defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hiersum.config.checks import MISSING, at_least_one
from hiersum.config.choices import LogLevel, ServeAccelerator, ServeHost
from hiersum.config.summary_options import SummaryOptions


@dataclass
class ServeLimits:
    """The most a request of ``hiersum serve`` may ask for in its ``options`` (``conf/serve.yaml``, ``limits``)."""

    beam_size: int = 8
    max_length: int = 200
    """Largest ``max_length`` (and ``min_length``) a request may set."""
    n_best: int = 4
    no_repeat_ngram_size: int = 4

    def __post_init__(self) -> None:
        for name in ("beam_size", "max_length", "n_best", "no_repeat_ngram_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"limits.{name} must be >= 1, found {getattr(self, name)}")


@dataclass
class ServeConfig(SummaryOptions):
    """``conf/serve.yaml`` (``hiersum serve``): an HTTP summarization service on LitServe
    (:mod:`hiersum.serving`). What it shares with ``hiersum summarize`` is :class:`SummaryOptions`'s: paragraph
    selection, ``precision``, ``batch_tokens``, ``attention_top_k`` (the most attended paragraphs returned, for
    models with inter-paragraph attention) and ``decode`` (the options of a request that sets none)."""

    task_name: str = MISSING
    checkpoint: str = MISSING
    """What ``hiersum summarize`` takes (read by :func:`hiersum.checkpoints.load_network`)."""
    host: ServeHost = ServeHost("127.0.0.1")
    """Address to listen on (``0.0.0.0``: every interface)."""
    port: int = 8000
    """In [1024, 65535] (LitServe's range)."""
    accelerator: ServeAccelerator = ServeAccelerator("auto")
    """LitServe's accelerator: ``auto``, ``cpu``, ``cuda``, ``mps``."""
    devices: int = 1
    """Devices (one inference worker each)."""
    workers_per_device: int = 1
    max_batch_size: int = 16
    """Requests decoded together (LitServe's dynamic batching); 1 turns batching off."""
    batch_timeout: float = 0.05
    """Seconds a batch waits to fill up before it is decoded anyway."""
    timeout: float = 60.0
    """Seconds a request may take, queued and decoding, before a 504."""
    max_queue: int | None = None
    """Requests waiting or decoding at once; past it, 503 with ``Retry-After`` (``None``: no limit)."""
    api_key: str | None = None
    """The key every route but ``/health`` and the page requires in ``X-API-Key`` (401 without it); ``None``: the
    environment variable ``LIT_SERVER_API_KEY`` if set, else no key."""
    allow_unauthenticated: bool = False
    """Serve a host other than 127.0.0.1 without a key (refused otherwise)."""
    shutdown_timeout: float = 30.0
    """Seconds SIGTERM (or Ctrl-C) waits for the requests in flight before the HTTP process is killed."""
    max_body_bytes: int = 1_000_000
    """Largest request body; a larger one gets 413."""
    limits: ServeLimits = field(default_factory=ServeLimits)
    log_level: LogLevel = LogLevel("info")
    """Of LitServe and uvicorn (one access line a request at ``info``): ``warning`` keeps them quiet."""
    paths: dict[str, Any] = MISSING

    def __post_init__(self) -> None:
        super().__post_init__()
        at_least_one(self, "devices", "workers_per_device", "max_batch_size", "max_body_bytes",
                     *(("max_queue",) if self.max_queue is not None else ()))
        self.host = ServeHost.coerce(self.host, "host")
        self.accelerator = ServeAccelerator.coerce(self.accelerator, "accelerator")
        self.log_level = LogLevel.coerce(self.log_level, "log_level")
        if not 1024 <= self.port <= 65535:
            raise ValueError(f"port must be in [1024, 65535], found {self.port}")
        if self.batch_timeout < 0 or self.timeout <= 0 or self.shutdown_timeout <= 0:
            raise ValueError(f"batch_timeout must be >= 0, timeout and shutdown_timeout > 0; found "
                             f"{self.batch_timeout}, {self.timeout} and {self.shutdown_timeout}")
