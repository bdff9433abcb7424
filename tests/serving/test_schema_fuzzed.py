"""``hiersum serve`` fuzzed from its own OpenAPI schema (``/openapi.json``) by schemathesis: a live server on
127.0.0.1 with the tiny model gets at least 300 generated requests, valid and invalid by the schema, and every
answer must be a status the schema lists, with the content type and body the schema gives it, and never a 5xx."""

from __future__ import annotations

from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.helpers.checkpoints import save_summarizer_checkpoint
from tests.helpers.serving import server_log, start_server, stop_server

pytestmark = pytest.mark.slow

EXAMPLES = 160
"""Requests of each mode (valid and invalid by the schema): hypothesis may stop short of it, the test may not."""
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
LIMITS = ["limits.beam_size=3", "limits.max_length=12", "limits.n_best=2", "decode.beam_size=2",
          "decode.max_length=8"]
"""The tiny model, short summaries: a request decodes in milliseconds."""


def test_300_requests_generated_from_the_schema_get_answers_it_describes_and_no_5xx(tmp_path: Path):
    checkpoint = save_summarizer_checkpoint(tmp_path / "tiny.ckpt")
    process, url = start_server(checkpoint, tmp_path / "server", *LIMITS)
    statuses: list[int] = []
    try:
        operation = schemathesis.openapi.from_url(f"{url}/openapi.json")["/summarize"]["POST"]
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                      suppress_health_check=list(HealthCheck))
            @given(case=operation.as_strategy(mode))
            def fuzz(case) -> None:  # noqa: ANN001 - schemathesis's Case
                statuses.append(case.call_and_validate(base_url=url, checks=CHECKS, timeout=60).status_code)

            fuzz()
    finally:
        stop_server(process)
    assert len(statuses) >= 300, len(statuses)
    assert statuses.count(200) >= 50 and statuses.count(422) >= 50, sorted(set(statuses))
    assert process.returncode == 0, server_log(tmp_path / "server")
