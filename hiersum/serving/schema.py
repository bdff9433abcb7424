"""The OpenAPI description of ``POST /summarize`` (its body, its answers and refusals), which LitServe cannot
infer (its endpoint reads the raw request): added to FastAPI's schema at ``/openapi.json`` and ``/docs``, and the
schema the serve tests fuzz the server from (schemathesis). The options' ranges are the server's own
(:func:`hiersum.serving.requests.option_ranges`), so the schema and the checks cannot disagree."""

from __future__ import annotations

from typing import Any

from hiersum.config import ServeLimits
from hiersum.serving.requests import option_ranges

_JSON_TYPES = {int: "integer", float: "number", bool: "boolean"}
_ERROR: dict[str, Any] = {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}
_REFUSALS = {
    "400": "the body is not a JSON object (or not UTF-8)",
    "401": "no key, or another key, in X-API-Key (a server with a key)",
    "413": "the body is over the server's max_body_bytes",
    "422": "a field is missing, of the wrong type or out of range",
    "503": "past the server's max_queue requests queued or decoding (Retry-After: seconds to wait)",
    "504": "no answer within the server's timeout",
}
_PARAGRAPH_INDEX = {"document": {"type": "integer"}, "paragraph": {"type": "integer"}}


def summarize_operation(limits: ServeLimits) -> dict[str, Any]:
    """The OpenAPI operation fields of ``POST /summarize`` under ``limits`` (FastAPI's ``openapi_extra``)."""
    options = {}
    for name, (kind, low, high) in option_ranges(limits).items():
        options[name] = {"type": _JSON_TYPES[kind], **({"minimum": low, "maximum": high} if low is not None else {})}
    text_or_paragraphs = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
    common = {"id": {"type": ["string", "integer"]}, "title": {"type": "string"},
              "options": {"type": "object", "properties": options, "additionalProperties": False}}
    body = {"anyOf": [
        {"type": "object", "required": ["documents"], "properties": {
            **common, "documents": {"type": "array", "minItems": 1, "items": text_or_paragraphs}}},
        {"type": "object", "required": ["text"], "properties": {**common, "text": {"type": "string"}}},
    ]}
    responses = {"200": {"description": "the summary", "content": {"application/json": {"schema": _answer()}}}}
    for status, description in _REFUSALS.items():
        responses[status] = {"description": description, "content": {"application/json": {"schema": _ERROR}}}
    failure = {**_ERROR, "required": ["error", "request_id"],
               "properties": {**_ERROR["properties"], "request_id": {"type": "string", "pattern": "^[0-9a-f]{16}$"}}}
    responses["500"] = {"description": "the model failed on this request (logged under request_id)",
                        "content": {"application/json": {"schema": failure}}}
    return {"summary": "Summarize one record (several documents) or a text",
            "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
            "responses": responses}


def _answer() -> dict[str, Any]:
    scored = {"type": "object", "required": ["summary", "score"],
              "properties": {"summary": {"type": "string"}, "score": {"type": "number"}}}
    attended = {"type": "object", "required": ["document", "paragraph", "weight"],
                "properties": {**_PARAGRAPH_INDEX, "weight": {"type": "number"}}}
    paragraph = {"type": "object", "required": ["text", "document", "paragraph", "attention"],
                 "properties": {"text": {"type": "string"}, **_PARAGRAPH_INDEX, "attention": {"type": "number"}}}
    return {"type": "object",
            "required": ["id", "summary", "score", "n_paragraphs_kept", "n_paragraphs_dropped", "paragraphs", "model"],
            "properties": {
                "id": {"type": "string"}, "summary": {"type": "string"}, "score": {"type": "number"},
                "n_paragraphs_kept": {"type": "integer", "minimum": 1},
                "n_paragraphs_dropped": {"type": "integer", "minimum": 0},
                "n_best": {"type": "array", "items": scored},
                "top_paragraphs": {"type": "array", "items": attended},
                "paragraphs": {"type": "array", "items": paragraph},
                "model": {"type": "object", "required": ["checkpoint", "corpus", "corpus_format", "sample_corpus",
                                                         "encoder", "parameters", "hiersum", "decode"],
                          "properties": {"corpus": {"type": ["string", "null"]},
                                         "corpus_format": {"type": ["string", "null"]},
                                         "sample_corpus": {"type": "boolean"}}},
            }}
