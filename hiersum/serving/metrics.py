"""The Prometheus metrics of ``hiersum serve`` (prometheus_client), scraped at ``/metrics``.

Each process of the server counts its own share: the HTTP process (requests, latency, queue depth) and the
inference workers (batch sizes, decoded tokens, model load time). prometheus_client's multiprocess mode sums
them: :func:`hiersum.serving.server.serve` points ``PROMETHEUS_MULTIPROC_DIR`` at a fresh folder before any of
them starts, and :func:`scrape` reads the folder. prometheus_client reads that variable when it is imported, so
this module is imported only where the metrics are used (after it is set), never at the top of a module the
server's main process imports first.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"

REQUESTS = Counter("hiersum_requests", "Requests to POST /summarize answered, by HTTP status", ["status"])
LATENCY = Histogram("hiersum_request_seconds", "Seconds from a request's arrival to its answer (POST /summarize)",
                    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120))
QUEUE_DEPTH = Gauge("hiersum_queue_depth", "Requests queued or decoding", multiprocess_mode="livesum")
BATCH_SIZE = Histogram("hiersum_batch_size", "Requests decoded together by an inference worker",
                       buckets=(1, 2, 4, 8, 16, 32, 64, 128))
DECODE_TOKENS = Counter("hiersum_decode_tokens", "Summary tokens decoded (best hypotheses)")
DECODE_RATE = Gauge("hiersum_decode_tokens_per_second", "Summary tokens per second of the last batch decoded",
                    multiprocess_mode="mostrecent")
MODEL_LOAD = Gauge("hiersum_model_load_seconds", "Seconds an inference worker took to load the model",
                   multiprocess_mode="max")


def scrape() -> tuple[bytes, str]:
    """The metrics of every process of the server in the Prometheus text format, and its content type."""
    registry = REGISTRY
    if MULTIPROCESS_DIR in os.environ:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    return generate_latest(registry), CONTENT_TYPE_LATEST
