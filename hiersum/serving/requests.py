"""The requests of ``hiersum serve``: a body checked into an :class:`Example` and its decoding options, or a
:class:`BadRequest` saying in one line which field is wrong (the wording of ``hiersum summarize``'s record
errors: the native and text readers of :mod:`hiersum.data.formats` do the checking); and the answer to one
request, built from the output line ``hiersum summarize`` writes for the same record.

A body is a native record, ``{"documents": [...], "title": ...}``, or plain text, ``{"text": "..."}``, with
optional ``"options"``: decoding settings of :class:`hiersum.config.DecodeConfig` within the server's
:class:`hiersum.config.ServeLimits`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import Any

from hiersum.config import DecodeConfig, ServeLimits
from hiersum.data.formats.lines import load_json_object
from hiersum.data.schema import Example, RecordError
from hiersum.inference.records import example_of

SOURCE = "request"
"""The file name of a request's record (its default id is ``request-1``, as the line readers name records)."""
ALPHA_RANGE = (0.0, 2.0)
"""The length penalty exponents a request may ask for."""


class BadRequest(ValueError):
    """A request refused before it reaches the model: its HTTP ``status`` and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ServeRequest:
    """A checked request."""

    example: Example
    decode: DecodeConfig
    """The server's decoding options with the request's own."""
    deadline: float | None = None
    """The ``time.monotonic()`` past which its decoding stops (its arrival plus the server's timeout)."""

    def options_key(self) -> str:
        """Equal for requests with equal decoding options (decoded together)."""
        return json.dumps(asdict(self.decode), sort_keys=True, default=str)


DEADLINE_FIELD = "_deadline"
"""The field the HTTP process adds to a checked body for the inference worker: the request's deadline (LitServe
hands a worker the body alone). A client's own is overwritten."""


def with_deadline(body: bytes, deadline: float) -> bytes:
    """``body`` (a checked JSON object) with its :data:`DEADLINE_FIELD`."""
    return json.dumps({**json.loads(body), DEADLINE_FIELD: deadline}).encode("utf-8")


def timeout_message(timeout: float) -> str:
    """The one line of a 504."""
    return f"request: expected an answer within {timeout:g} s (the server's timeout), found none"


def read_request(body: bytes | dict[str, Any], *, defaults: DecodeConfig, limits: ServeLimits) -> ServeRequest:
    """The request of ``body`` (its bytes, or the JSON object already parsed), or a :class:`BadRequest`: 400
    for a body that is not a JSON object (or not UTF-8), 422 for a missing, wrong-typed or out-of-range field."""
    try:
        record = body if isinstance(body, dict) else load_json_object(_text(body), path=SOURCE, line=1)
        example = example_of(record, source=SOURCE, line=1)
    except RecordError as error:
        status = 400 if error.field_name is None else 422  # the body as a whole, or one of its fields
        raise BadRequest(status, _message(error)) from None
    return ServeRequest(example=example, decode=_decode_options(record.get("options"), defaults, limits))


def _text(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RecordError(SOURCE, 1, None, f"expected UTF-8 text, found invalid byte at {error.start}") from None


def _message(error: RecordError) -> str:
    """``field 'documents': expected ..., found ...`` (``body: ...`` for the body as a whole)."""
    where = f"field '{error.field_name}'" if error.field_name else "body"
    return f"{where}: {error.reason}"


def _decode_options(options: Any, defaults: DecodeConfig, limits: ServeLimits) -> DecodeConfig:
    """``defaults`` with the request's ``options``, each checked against ``limits``."""
    if options is None:
        return defaults
    if not isinstance(options, dict):
        raise BadRequest(422, f"field 'options': expected a JSON object, found {type(options).__name__}")
    ranges = option_ranges(limits)
    changes = {}
    for name, value in options.items():
        if name not in ranges:
            raise BadRequest(422, f"field 'options.{name}': expected one of {', '.join(ranges)}, "
                                  "found an unknown option")
        changes[name] = _checked_option(name, value, ranges[name])
    try:
        return replace(defaults, **changes)
    except ValueError as error:  # DecodeConfig's own checks: n_best <= beam_size, min_length <= max_length
        raise BadRequest(422, f"field 'options': {error}") from None


def option_ranges(limits: ServeLimits) -> dict[str, tuple[type, Any, Any]]:
    """The options a request may set: (type, lowest, highest); a bool has no range."""
    return {
        "beam_size": (int, 1, limits.beam_size),
        "max_length": (int, 1, limits.max_length),
        "min_length": (int, 0, limits.max_length),
        "n_best": (int, 1, limits.n_best),
        "no_repeat_ngram_size": (int, 0, limits.no_repeat_ngram_size),
        "alpha": (float, *ALPHA_RANGE),
        "greedy": (bool, None, None),
    }


def _checked_option(name: str, value: Any, allowed: tuple[type, Any, Any]) -> Any:
    kind, low, high = allowed
    numbers = (int, float) if kind is float else (kind,)
    if isinstance(value, bool) != (kind is bool) or not isinstance(value, numbers):
        expected = {int: "an integer", float: "a number", bool: "true or false"}[kind]
        raise BadRequest(422, f"field 'options.{name}': expected {expected}, found {type(value).__name__}")
    if low is not None and not low <= value <= high:
        raise BadRequest(422, f"field 'options.{name}': expected a value in [{low}, {high}] (the server's limit), "
                              f"found {value}")
    return kind(value)
