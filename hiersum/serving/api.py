"""What ``hiersum serve`` runs: the LitServe API of the model (:class:`SummarizeAPI`, in each inference worker),
the checks of a request before it joins a batch (:class:`RequestChecks`, in the HTTP process) and the
answering of a batch of checked requests (:class:`Responder`).

Why the checks run in the HTTP process: LitServe decodes the requests of a batch together, and one
``decode_request`` that raises fails every request of the batch; a bad request is refused before it is
queued, so it never reaches a batch. A batch that fails in the model is decoded again request by request,
so only the request that fails gets its 500 (with a request id, logged with the traceback).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import multiprocessing
import signal
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import asdict, dataclass, replace
from typing import Any

import litserve
from starlette.responses import JSONResponse

from hiersum.config import DecodeConfig, ServeConfig, ServeLimits
from hiersum.data.sample_location import is_sample_corpus
from hiersum.inference.pipeline import Summarizer, load_summarizer
from hiersum.serving.requests import (
    DEADLINE_FIELD,
    BadRequest,
    ServeRequest,
    read_request,
    timeout_message,
    with_deadline,
)

logger = logging.getLogger(__name__)

API_PATH = "/summarize"
RETRY_AFTER_SECONDS = 1
"""What a 503 (``max_queue`` reached) tells a client to wait."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


@dataclass(frozen=True)
class TimedOut:
    """A request whose deadline passed while it was decoding (its search stopped): answered 504."""


@dataclass(frozen=True)
class Failure:
    """A request that failed inside the model: answered 500 with ``request_id`` (also in the server's log)."""

    request_id: str


class Responder:
    """Answers checked requests with a loaded summarizer: each one the line ``hiersum summarize`` writes for its
    record (:meth:`hiersum.inference.Summarizer.lines`) with its ``paragraphs`` and the ``model`` block, requests
    with equal decoding options decoded together."""

    def __init__(self, cfg: ServeConfig, summarizer: Summarizer) -> None:
        self.summarizer = summarizer
        self.selection = summarizer.selection(cfg)
        self.attention_top_k = cfg.attention_top_k if summarizer.inter_paragraph else 0
        data, config = summarizer.data_config, summarizer.network.model_config
        corpus = data.path if data is not None else None
        self.model = {"checkpoint": cfg.checkpoint, "corpus": corpus,
                      "corpus_format": str(data.format) if data is not None else None,
                      "sample_corpus": corpus is not None and is_sample_corpus(corpus), "encoder": str(config.encoder),
                      "parameters": sum(p.numel() for p in summarizer.model.parameters()),
                      "hiersum": importlib.metadata.version("hiersum")}

    def answer(self, requests: list[ServeRequest]) -> list[dict[str, Any] | Failure | TimedOut]:
        """The answer to each request (a :class:`Failure` where the model failed on it, :class:`TimedOut` where
        its deadline passed first: its decoding stopped, the others of its batch went on), in order."""
        groups: dict[str, list[int]] = {}
        for index, request in enumerate(requests):
            groups.setdefault(request.options_key(), []).append(index)
        answers: list[dict[str, Any] | Failure | None] = [None] * len(requests)
        for indices in groups.values():
            try:
                self._decode(requests, indices, answers)
            except Exception:  # noqa: BLE001 - retried request by request below, each failure logged
                for index in indices:
                    answers[index] = self._decode_alone(requests, index, answers)
        return answers  # type: ignore[return-value]

    def _decode_alone(self, requests: list[ServeRequest], index: int,
                      answers: list[dict[str, Any] | Failure | None]) -> dict[str, Any] | Failure:
        try:
            self._decode(requests, [index], answers)
        except Exception:  # noqa: BLE001 - a failure inside the model answers 500, the worker goes on
            request_id = uuid.uuid4().hex[:16]
            logger.exception("request %s failed inside the model (id %r)", request_id, requests[index].example.id)
            return Failure(request_id)
        return answers[index]  # type: ignore[return-value]

    def _decode(self, requests: list[ServeRequest], indices: list[int],
                answers: list[dict[str, Any] | Failure | None]) -> None:
        decode = requests[indices[0]].decode
        model = {**self.model, "decode": asdict(decode)}
        for positions, lines in self.summarizer.lines(
            [requests[index].example for index in indices], selection=self.selection, decode=decode,
            attention_top_k=self.attention_top_k, paragraphs=True,
            deadlines=[requests[index].deadline for index in indices],
        ):
            for position, line in zip(positions, lines, strict=True):
                answers[indices[position]] = TimedOut() if line is None else {**line, "model": model}


class SummarizeAPI(litserve.LitAPI):
    """``POST /summarize`` on LitServe: dynamic batching of up to ``cfg.max_batch_size`` requests."""

    def __init__(self, cfg: ServeConfig) -> None:
        super().__init__(max_batch_size=cfg.max_batch_size, batch_timeout=cfg.batch_timeout, api_path=API_PATH)
        self.cfg = cfg

    def setup(self, device: str) -> None:
        if multiprocessing.current_process().name != "MainProcess":
            # An inference worker (LitServe may spawn it afresh, so it does not inherit the server's handlers):
            # Ctrl-C in a terminal signals the whole group, and the server process stops the workers in order,
            # after the requests in flight are answered.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        from hiersum.serving import metrics  # after PROMETHEUS_MULTIPROC_DIR is set (inherited by this worker)

        self.metrics = metrics
        started = time.monotonic()
        cfg = self.cfg
        self.responder = Responder(cfg, load_summarizer(cfg.checkpoint, device=device, precision=str(cfg.precision),
                                                        batch_tokens=cfg.batch_tokens))
        metrics.MODEL_LOAD.set(time.monotonic() - started)

    def decode_request(self, request) -> ServeRequest:  # noqa: ANN001 - LitServe reads an annotation as the body type
        """``request``: the JSON object of the body, checked already by :class:`RequestChecks`, with its
        deadline."""
        deadline = request.pop(DEADLINE_FIELD, None)
        return replace(read_request(request, defaults=self.cfg.decode, limits=self.cfg.limits), deadline=deadline)

    def predict(self, x: ServeRequest | list[ServeRequest]) -> Any:
        requests = x if isinstance(x, list) else [x]  # a list: a batch (max_batch_size > 1)
        started = time.monotonic()
        answers = self.responder.answer(requests)
        self._count(answers, time.monotonic() - started)
        return answers if isinstance(x, list) else answers[0]

    def _count(self, answers: list[dict[str, Any] | Failure | TimedOut], seconds: float) -> None:
        """The batch in the metrics: its size, and the tokens of its summaries (best hypotheses) per second."""
        metrics = getattr(self, "metrics", None)
        if metrics is None:  # not set up (a test's API)
            return
        summaries = [answer["summary"] for answer in answers if isinstance(answer, dict)]
        tokens = sum(map(len, self.responder.summarizer.tokenizer.encode_batch(summaries))) if summaries else 0
        metrics.BATCH_SIZE.observe(len(answers))
        metrics.DECODE_TOKENS.inc(tokens)
        metrics.DECODE_RATE.set(tokens / max(seconds, 1e-9))

    def encode_response(self, output: dict[str, Any] | Failure | TimedOut) -> Any:
        if isinstance(output, TimedOut):
            return JSONResponse({"error": timeout_message(self.cfg.timeout)}, status_code=504)
        if isinstance(output, Failure):
            return JSONResponse({"error": "the model failed on this request; the server's log has the traceback "
                                          f"under request id {output.request_id}", "request_id": output.request_id},
                                status_code=500)
        return output


DRAIN_CAP_BYTES = 64 * 2**20
"""The most of an oversize body read and discarded before its 413: a client still sending (Python's ``urllib``,
``requests``) hears the answer instead of a reset connection. Past it the connection is closed."""


class RequestChecks:
    """ASGI middleware of ``POST path`` in the HTTP process: a body over ``max_body_bytes`` gets 413 (read to its
    end first, up to :data:`DRAIN_CAP_BYTES`), one that :func:`read_request` refuses its 400 or 422, each
    ``{"error": one line}``; past ``max_queue`` requests queued or decoding, 503 with ``Retry-After``; a request
    unanswered ``timeout`` seconds after it arrived, 504. The others go on, as JSON. Each answer is counted in
    :mod:`hiersum.serving.metrics`."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], *, path: str, max_body_bytes: int,
                 defaults: DecodeConfig, limits: ServeLimits, timeout: float | None = None,
                 max_queue: int | None = None, queued: Any = None) -> None:
        from hiersum.serving import metrics  # after PROMETHEUS_MULTIPROC_DIR is set (in the HTTP process)

        self.app = app
        self.path = path
        self.max_body_bytes = max_body_bytes
        self.defaults = defaults
        self.limits = limits
        self.timeout = timeout
        self.max_queue = max_queue
        self.queued = queued if queued is not None else multiprocessing.Value("i", 0)
        """Requests past the checks and not yet answered, in every HTTP process (a shared counter)."""
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status = {}

        async def counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self._answer(scope, receive, counted, started)
        finally:
            self.metrics.REQUESTS.labels(status=str(status.get("code", 0))).inc()
            self.metrics.LATENCY.observe(time.monotonic() - started)

    async def _answer(self, scope: Scope, receive: Receive, send: Send, started: float) -> None:
        key = litserve.server.LIT_SERVER_API_KEY
        if key and dict(scope["headers"]).get(b"x-api-key", b"").decode("latin-1") != key:
            await _discard(receive)  # the body is not looked at: LitServe's key check answers 401
            await self.app(scope, _replay(b"", receive), send)
            return
        try:
            body = await self._body(scope, receive)
            read_request(body, defaults=self.defaults, limits=self.limits)
            self._admit()
        except BadRequest as error:
            headers = {"Retry-After": str(RETRY_AFTER_SECONDS)} if error.status == 503 else None
            await JSONResponse({"error": str(error)}, status_code=error.status, headers=headers)(scope, receive, send)
            return
        headers = [(name, value) for name, value in scope["headers"] if name != b"content-type"]
        scope = {**scope, "headers": [*headers, (b"content-type", b"application/json")]}  # read as JSON by LitServe
        if self.timeout is not None:
            body = with_deadline(body, started + self.timeout)
        self.metrics.QUEUE_DEPTH.inc()
        try:
            await self._within_timeout(scope, _replay(body, receive), send)
        finally:
            with self.queued.get_lock():
                self.queued.value -= 1
            self.metrics.QUEUE_DEPTH.dec()

    def _admit(self) -> None:
        """Count the request in, or a 503 past ``max_queue``."""
        with self.queued.get_lock():
            if self.max_queue is not None and self.queued.value >= self.max_queue:
                raise BadRequest(503, f"server busy: {self.queued.value} requests queued or decoding (the server's "
                                      f"max_queue); retry after {RETRY_AFTER_SECONDS} s")
            self.queued.value += 1

    async def _within_timeout(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The app's answer, or a 504 once ``timeout`` seconds have passed and the app has not started to answer.
        The app is not cancelled then but left to finish, its answer dropped: LitServe forgets a request only once
        its worker has answered it (the worker gives it up at the same deadline)."""
        owner = None  # who answers: the app, or this 504

        async def guarded(message: Message) -> None:
            nonlocal owner
            if owner is None and message["type"] == "http.response.start":
                owner = "app"
            if owner == "app":
                await send(message)

        app = asyncio.ensure_future(self.app(scope, receive, guarded))
        await asyncio.wait({app}, timeout=self.timeout)
        if not app.done() and owner is None:
            owner = "timeout"
            app.add_done_callback(_retrieve)
            await JSONResponse({"error": timeout_message(self.timeout)}, status_code=504)(scope, receive, send)
            return
        await app

    async def _body(self, scope: Scope, receive: Receive) -> bytes:
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await _discard(receive)
            raise BadRequest(413, self._too_large(f"{int(declared)} bytes"))
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_body_bytes:
                if message.get("more_body", False):
                    await _discard(receive, size)
                raise BadRequest(413, self._too_large("more"))
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    def _too_large(self, found: str) -> str:
        return f"body: expected at most {self.max_body_bytes} bytes (the server's max_body_bytes), found {found}"


def _retrieve(task: asyncio.Future) -> None:
    """Retrieve the outcome of an app left to finish after a 504 (its exception, if any, is the app's to log)."""
    if not task.cancelled():
        task.exception()


async def _discard(receive: Receive, size: int = 0) -> None:
    """Read the rest of a body (``size`` bytes of it read already) and drop it, up to :data:`DRAIN_CAP_BYTES`."""
    while size <= DRAIN_CAP_BYTES:
        message = await receive()
        size += len(message.get("body", b""))
        if message["type"] == "http.disconnect" or not message.get("more_body", False):
            return


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then what ``receive`` gives (a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed
