"""The config of ``hiersum serve``: the HTTP service, its limits and its defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hiersum.config.checks import MISSING, at_least_one
from hiersum.config.choices import Precision, Selection
from hiersum.config.decode import DecodeConfig

SERVE_HOSTS = ("127.0.0.1", "0.0.0.0", "::")
"""The addresses LitServe listens on: this machine, every IPv4 interface, every interface."""
SERVE_ACCELERATORS = ("auto", "cpu", "cuda", "mps")
SERVE_LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


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
class ServeConfig:
    """``conf/serve.yaml`` (``hiersum serve``): an HTTP summarization service on LitServe
    (:mod:`hiersum.serving`)."""

    task_name: str = MISSING
    checkpoint: str = MISSING
    """What ``hiersum summarize`` takes (read by :func:`hiersum.checkpoints.load_summarizer`)."""
    host: str = "127.0.0.1"
    """Address to listen on (``0.0.0.0``: every interface)."""
    port: int = 8000
    """In [1024, 65535] (LitServe's range)."""
    accelerator: str = "auto"
    """LitServe's accelerator: ``auto``, ``cpu``, ``cuda``."""
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
    precision: Precision = Precision("32")  # type: ignore[valid-type]
    batch_tokens: int = 8192
    """Token budget of a decoding batch (examples x paragraphs x tokens)."""
    max_paragraphs: int | None = None
    max_paragraph_tokens: int | None = None
    selection: Selection | None = None  # type: ignore[valid-type]
    ranker: str | None = None
    attention_top_k: int = 3
    """Most attended paragraphs returned (``paragraphs``; models with inter-paragraph attention)."""
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    """The decoding options of a request that sets none (``summarize``'s defaults)."""
    limits: ServeLimits = field(default_factory=ServeLimits)
    log_level: str = "info"
    """Of LitServe and uvicorn (one access line a request at ``info``): ``warning`` keeps them quiet."""
    paths: dict[str, Any] = MISSING

    def __post_init__(self) -> None:
        at_least_one(self, "devices", "workers_per_device", "max_batch_size", "max_body_bytes", "batch_tokens",
                      "attention_top_k", *(("max_queue",) if self.max_queue is not None else ()))
        choices = {"host": SERVE_HOSTS, "accelerator": SERVE_ACCELERATORS, "log_level": SERVE_LOG_LEVELS}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, found {getattr(self, name)!r}")
        if not 1024 <= self.port <= 65535:
            raise ValueError(f"port must be in [1024, 65535], found {self.port}")
        if self.batch_timeout < 0 or self.timeout <= 0 or self.shutdown_timeout <= 0:
            raise ValueError(f"batch_timeout must be >= 0, timeout and shutdown_timeout > 0; found "
                             f"{self.batch_timeout}, {self.timeout} and {self.shutdown_timeout}")
