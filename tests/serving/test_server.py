"""``hiersum serve``'s server in process (:func:`hiersum.serving.server.build_server`, its ASGI app called
directly): the key (LitServe's ``X-API-Key`` check) on every route but ``/health`` and the page, its one-line
401, ``/metrics`` in the Prometheus text format, and the refusal of a network host without a key."""

from __future__ import annotations

import json

import litserve
import pytest
from prometheus_client.parser import text_string_to_metric_families

from hiersum.config import ServeConfig
from hiersum.errors import UsageError
from hiersum.serving.client import call_asgi
from hiersum.serving.server import build_server, server_key

KEY = "s3cret"


@pytest.fixture()
def keyless():
    """LitServe's key (a global of its module, set by build_server) as it was."""
    before = litserve.server.LIT_SERVER_API_KEY
    yield
    litserve.server.LIT_SERVER_API_KEY = before


@pytest.mark.usefixtures("keyless")
def test_with_a_key_every_route_but_health_and_the_page_answers_401_in_one_line():
    server = build_server(ServeConfig(checkpoint="x.ckpt"), key=KEY)
    body = json.dumps({"text": "a b c"}).encode()
    for method, path in [("POST", "/summarize"), ("GET", "/info"), ("GET", "/metrics")]:
        for headers, found in [({}, "none"), ({"X-API-Key": "wrong"}, "another key")]:
            status, answer = call_asgi(server.app, method, path, headers, body)
            assert status == 401, (path, answer)
            assert json.loads(answer) == {"error": f"header 'X-API-Key': expected the server's key, found {found}"}
    bad = json.dumps({"documents": []}).encode()  # refused 401, before its body is looked at
    assert call_asgi(server.app, "POST", "/summarize", {}, bad)[0] == 401
    assert call_asgi(server.app, "POST", "/summarize", {"X-API-Key": KEY}, bad)[0] == 422
    assert call_asgi(server.app, "GET", "/info", {"X-API-Key": KEY})[0] == 200
    assert call_asgi(server.app, "GET", "/")[0] == 200
    health = [route for route in server.app.router.routes if getattr(route, "path", None) == "/health"]
    assert len(health) == 1 and not health[0].dependencies  # open to a load balancer's probe


@pytest.mark.usefixtures("keyless")
def test_without_a_key_nothing_asks_for_one():
    server = build_server(ServeConfig(checkpoint="x.ckpt"))
    assert call_asgi(server.app, "GET", "/info")[0] == 200
    assert call_asgi(server.app, "POST", "/summarize", {}, b'{"documents": []}')[0] == 422


@pytest.mark.usefixtures("keyless")
def test_metrics_are_in_the_prometheus_text_format():
    server = build_server(ServeConfig(checkpoint="x.ckpt"), key=KEY)
    call_asgi(server.app, "POST", "/summarize", {"X-API-Key": KEY}, b"{bad")
    status, text = call_asgi(server.app, "GET", "/metrics", {"X-API-Key": KEY})
    families = {family.name: family for family in text_string_to_metric_families(text.decode())}
    assert status == 200
    assert {"hiersum_requests", "hiersum_request_seconds", "hiersum_queue_depth", "hiersum_batch_size",
            "hiersum_decode_tokens", "hiersum_decode_tokens_per_second", "hiersum_model_load_seconds"} <= set(families)
    assert any(sample.labels.get("status") == "400" and sample.value >= 1
               for sample in families["hiersum_requests"].samples)


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_a_network_host_without_a_key_is_refused_naming_both_ways_out(host, monkeypatch):
    monkeypatch.delenv("LIT_SERVER_API_KEY", raising=False)
    with pytest.raises(UsageError) as refused:
        server_key(ServeConfig(checkpoint="x.ckpt", host=host))
    message = str(refused.value)
    assert "\n" not in message and "api_key=" in message and "LIT_SERVER_API_KEY" in message
    assert "allow_unauthenticated=true" in message
    assert server_key(ServeConfig(checkpoint="x.ckpt", host=host, allow_unauthenticated=True)) is None
    assert server_key(ServeConfig(checkpoint="x.ckpt", host=host, api_key=KEY)) == KEY
    monkeypatch.setenv("LIT_SERVER_API_KEY", "from-env")
    assert server_key(ServeConfig(checkpoint="x.ckpt", host=host)) == "from-env"
    assert server_key(ServeConfig(checkpoint="x.ckpt", host=host, api_key=KEY)) == KEY


def test_on_this_machine_alone_no_key_is_needed(monkeypatch):
    monkeypatch.delenv("LIT_SERVER_API_KEY", raising=False)
    assert server_key(ServeConfig(checkpoint="x.ckpt")) is None
