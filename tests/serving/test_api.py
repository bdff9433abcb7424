"""``hiersum serve`` in process: the answers of :class:`hiersum.serving.api.Responder` are the summarize lines
of the same records and options, a failure inside the model answers only its own request (500 with a request
id, logged), and :class:`hiersum.serving.api.RequestChecks` refuses bad bodies before they are queued."""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing
import pickle
import time
from dataclasses import replace

import pytest

import hiersum.serving.api as api
from hiersum.checkpoints.io import load_network
from hiersum.commands.export import export
from hiersum.commands.summarize import summarize
from hiersum.config import DecodeConfig, ExportConfig, ServeConfig, ServeLimits
from hiersum.inference import Summarizer, load_summarizer
from hiersum.serving.api import Failure, RequestChecks, Responder, SummarizeAPI, TimedOut
from hiersum.serving.requests import read_request
from tests.helpers.checkpoints import save_summarizer_checkpoint
from tests.helpers.serving import as_summarize_line, assert_same_lines

DECODE = DecodeConfig(beam_size=2, min_length=1, max_length=6)
LIMITS = ServeLimits()
BODIES = [
    {"id": "a", "title": "alpha", "documents": ["alpha beta gamma.\n\nbeta gamma delta.", "epsilon zeta."]},
    {"id": "b", "text": "gamma delta epsilon zeta alpha."},
    {"id": "c", "documents": [["beta beta.", "gamma"], "delta epsilon.\n\nzeta zeta alpha beta."],
     "options": {"beam_size": 3, "n_best": 2}},
    {"id": "d", "documents": ["zeta.\n\nalpha.\n\nbeta gamma."], "options": {"greedy": True, "max_length": 4}},
]


@pytest.fixture(scope="module")
def cfg(tmp_path_factory: pytest.TempPathFactory) -> ServeConfig:
    checkpoint = save_summarizer_checkpoint(tmp_path_factory.mktemp("serve") / "tiny.ckpt")
    return ServeConfig(checkpoint=str(checkpoint), decode=DECODE, attention_top_k=2, max_batch_size=4)


@pytest.fixture(scope="module")
def responder(cfg: ServeConfig) -> Responder:
    return Responder(cfg, serving(cfg, load_network(cfg.checkpoint)))


def serving(cfg: ServeConfig, network) -> Summarizer:
    """The summarizer a worker of ``cfg`` serves ``network`` with, on the CPU."""
    return Summarizer(network, checkpoint=cfg.checkpoint, precision=str(cfg.precision), batch_tokens=cfg.batch_tokens)


def requests(bodies: list[dict]) -> list:
    return [read_request(body, defaults=DECODE, limits=LIMITS) for body in bodies]


def summarize_lines(responder: Responder, cfg: ServeConfig, bodies: list[dict]) -> list[dict]:
    """What ``hiersum summarize`` writes for each body alone (its own options, attention on)."""
    lines = []
    summarizer = responder.summarizer
    for request in requests(bodies):
        lines += next(summarizer.lines([request.example], selection=summarizer.selection(cfg), decode=request.decode,
                                       attention_top_k=cfg.attention_top_k))[1]
    return lines


def test_a_batch_of_mixed_options_is_answered_in_order_with_the_summarize_lines(responder, cfg):
    answers = responder.answer(requests(BODIES))
    assert [answer["id"] for answer in answers] == ["a", "b", "c", "d"]
    assert_same_lines(answers, summarize_lines(responder, cfg, BODIES))
    assert len(answers[2]["n_best"]) == 2 and "n_best" not in answers[0]
    assert answers[3]["model"]["decode"]["greedy"] and not answers[0]["model"]["decode"]["greedy"]
    assert answers[0]["model"]["encoder"] == "hierarchical" and answers[0]["model"]["parameters"] > 0
    first = answers[0]
    assert len(first["paragraphs"]) == 2
    assert [(p["document"], p["paragraph"], p["attention"]) for p in first["paragraphs"]] == [
        (p["document"], p["paragraph"], p["weight"]) for p in first["top_paragraphs"]]
    texts = {(-1, 0): "alpha", (0, 0): "alpha beta gamma.", (0, 1): "beta gamma delta.", (1, 0): "epsilon zeta."}
    assert all(p["text"] == texts[p["document"], p["paragraph"]] for p in first["paragraphs"])


def test_summarize_serve_and_the_python_call_give_the_same_lines(cfg, tiny_cfg, device, tmp_path):
    """The one summarizer under the three front ends: each record decoded alone (no batch-mate's padding) gets the
    same line, to the last bit, from ``hiersum summarize``, the served API and ``load_summarizer(...).summarize``."""
    records = [{"id": body["id"], **({"title": body["title"]} if "title" in body else {}),
                "documents": body.get("documents", [body.get("text")])} for body in BODIES]  # native JSONL
    options = {"beam_size": 3, "n_best": 2, "min_length": 1, "max_length": 6}
    source, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    summarize(tiny_cfg(f"checkpoint={cfg.checkpoint}", f"input={source}", f"output={output}", "sort_window=1",
                       *(f"decode.{name}={value}" for name, value in options.items()), "attention=true",
                       f"attention_top_k={cfg.attention_top_k}", name="summarize", output_dir=tmp_path / "hydra"))
    written = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    summarizer = load_summarizer(cfg.checkpoint, device=str(device))
    called = [line for record in records
              for line in summarizer.summarize(record, attention_top_k=cfg.attention_top_k, **options)]
    lit_api = SummarizeAPI(cfg)
    lit_api.responder = Responder(cfg, summarizer)  # what setup() makes in a worker
    served = [lit_api.encode_response(lit_api.predict(lit_api.decode_request({**record, "options": options})))
              for record in records]
    assert [line["id"] for line in written] == ["a", "b", "c", "d"] and "top_paragraphs" in written[0]
    assert [{key: value for key, value in line.items() if key != "paragraphs"} for line in called] == written
    assert [as_summarize_line(answer) for answer in served] == written
    assert [answer["paragraphs"] for answer in served] == [line["paragraphs"] for line in called]


def test_the_model_block_names_the_corpus_and_whether_it_is_the_synthetic_sample(responder, cfg):
    model = responder.answer(requests(BODIES[:1]))[0]["model"]
    assert (model["corpus"], model["sample_corpus"]) == ("x", False)  # the tiny checkpoint's data.path
    assert model["corpus_format"] == "jsonl"
    for path in ["/repo/data/sample", "/home/u/.cache/hiersum/sample-0123456789ab"]:
        summarizer = load_network(cfg.checkpoint)
        summarizer = replace(summarizer, data_config=replace(summarizer.data_config, path=path))
        model = Responder(cfg, serving(cfg, summarizer)).answer(requests(BODIES[:1]))[0]["model"]
        assert (model["corpus"], model["sample_corpus"]) == (path, True)
    cnndm = replace(load_network(cfg.checkpoint), data_config=replace(summarizer.data_config, format="cnndm"))
    assert Responder(cfg, serving(cfg, cnndm)).answer(requests(BODIES[:1]))[0]["model"]["corpus_format"] == "cnndm"
    summarizer = replace(load_network(cfg.checkpoint), data_config=None)  # an old checkpoint: not recorded
    model = Responder(cfg, serving(cfg, summarizer)).answer(requests(BODIES[:1]))[0]["model"]
    assert (model["corpus"], model["corpus_format"], model["sample_corpus"]) == (None, None, False)


def test_a_service_of_an_exported_model_directory_answers_as_the_checkpoint_it_came_from(responder, cfg, tmp_path):
    directory = tmp_path / "exported"
    export(ExportConfig(task_name="export", checkpoint=cfg.checkpoint, output=str(directory), overwrite=False,
                        paths={}))
    from_directory = Responder(cfg, serving(cfg, load_network(str(directory))))
    assert from_directory.answer(requests(BODIES)) == responder.answer(requests(BODIES))


def test_a_failure_inside_the_model_answers_that_request_only(responder, cfg, monkeypatch, caplog):
    real = Summarizer.lines

    def failing(summarizer, examples, **options):
        if any(example.id == "boom" for example in examples):
            raise RuntimeError("the model broke")
        return real(summarizer, examples, **options)

    monkeypatch.setattr(Summarizer, "lines", failing)
    bodies = [BODIES[0], {"id": "boom", "text": "alpha beta."}, BODIES[1]]
    with caplog.at_level(logging.ERROR, logger="hiersum.serving.api"):
        answers = responder.answer(requests(bodies))
    failure = answers[1]
    assert isinstance(failure, Failure) and len(failure.request_id) == 16
    assert_same_lines([answers[0], answers[2]], summarize_lines(responder, cfg, [BODIES[0], BODIES[1]]))
    logged = [record for record in caplog.records if failure.request_id in record.getMessage()]
    assert len(logged) == 1 and "the model broke" in caplog.text
    monkeypatch.setattr(Summarizer, "lines", real)
    assert_same_lines(responder.answer(requests([BODIES[1]])), summarize_lines(responder, cfg, [BODIES[1]]))


def test_a_request_past_its_deadline_is_answered_504_and_the_others_of_its_batch_as_without_it(responder, cfg):
    late = [replace(request, deadline=time.monotonic() - 1 if i == 1 else time.monotonic() + 600)
            for i, request in enumerate(requests(BODIES[:3]))]
    answers = responder.answer(late)
    assert isinstance(answers[1], TimedOut)
    assert_same_lines([answers[0], answers[2]], summarize_lines(responder, cfg, [BODIES[0], BODIES[2]]))
    lit_api = SummarizeAPI(cfg)
    reply = pickle.loads(pickle.dumps(lit_api.encode_response(answers[1])))  # LitServe's queues
    assert reply.status_code == 504
    assert json.loads(reply.body) == {"error": f"request: expected an answer within {cfg.timeout:g} s (the server's "
                                               "timeout), found none"}


def test_the_deadline_goes_with_the_body_to_the_worker(cfg):
    body = {**BODIES[1], "_deadline": 1.0}  # a client's own is overwritten by the checks
    before = time.monotonic()
    status, _, seen, _, _ = run_checks([json.dumps(body).encode()], timeout=30)
    forwarded = json.loads(seen["body"])
    deadline = forwarded["_deadline"]
    assert status == 200 and before + 30 <= deadline <= time.monotonic() + 30
    request = SummarizeAPI(cfg).decode_request(forwarded)
    assert request.deadline == deadline and request.example.id == "b"


def test_the_api_answers_a_failure_500_with_its_request_id_through_a_queue(responder, cfg):
    lit_api = SummarizeAPI(cfg)
    lit_api.responder = responder
    reply = pickle.loads(pickle.dumps(lit_api.encode_response(Failure("0123456789abcdef"))))  # LitServe's queues
    assert reply.status_code == 500
    assert json.loads(reply.body)["request_id"] == "0123456789abcdef"
    one = lit_api.predict(lit_api.decode_request(BODIES[1]))  # max_batch_size 1: one request, not a list
    assert lit_api.encode_response(one) == responder.answer(requests([BODIES[1]]))[0]
    batched = lit_api.predict([lit_api.decode_request(body) for body in BODIES[:2]])[1]
    # a batch of two pads the shorter example: the same summary, its score to float rounding
    assert batched.pop("score") == pytest.approx(one.pop("score"), rel=1e-6) and batched == one


def run_checks(body_chunks: list[bytes], *, headers: list[tuple[bytes, bytes]] = (), max_body_bytes: int = 200,
               app_seconds: float = 0, linger: float = 0, **options):
    """(status, JSON answer, body and content type the app behind the checks received (and whether it finished)
    or None, the response's headers, the body messages left unread); the app answers after ``app_seconds``, the
    event loop runs on ``linger`` seconds after the checks return."""
    seen = {}

    async def app(scope, receive, send):
        message = await receive()
        seen["body"], seen["type"] = message["body"], dict(scope["headers"]).get(b"content-type")
        await asyncio.sleep(app_seconds)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})
        seen["finished"] = True

    messages = [{"type": "http.request", "body": chunk, "more_body": i < len(body_chunks) - 1}
                for i, chunk in enumerate(body_chunks)]
    sent = []

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    checks = RequestChecks(app, path="/summarize", max_body_bytes=max_body_bytes, defaults=DECODE, limits=LIMITS,
                           **options)
    scope = {"type": "http", "path": "/summarize", "method": "POST", "headers": list(headers)}
    async def run() -> None:
        await checks(scope, receive, send)
        await asyncio.sleep(linger)

    asyncio.run(run())
    assert [message["type"] for message in sent].count("http.response.start") == 1
    body = b"".join(message.get("body", b"") for message in sent[1:])
    if seen:
        seen.setdefault("finished", False)
    return sent[0]["status"], json.loads(body), seen or None, dict(sent[0]["headers"]), len(messages)


def test_the_checks_pass_a_good_body_on_whole_as_json_and_refuse_a_bad_one_before_the_app():
    good = json.dumps(BODIES[1]).encode()
    form = [(b"content-type", b"application/x-www-form-urlencoded")]  # curl -d's type: read as JSON all the same
    status, _, seen, _, _ = run_checks([good[:10], good[10:]], headers=form)
    assert (status, seen) == (200, {"body": good, "type": b"application/json", "finished": True})
    status, answer, seen, _, _ = run_checks([b'{"documents": []}'])
    assert (status, seen) == (422, None)
    assert answer == {"error": "field 'documents': expected a non-empty list of documents, found an empty list"}


def test_the_checks_refuse_a_body_over_the_limit_by_its_length_or_as_it_arrives_after_reading_it_all():
    status, answer, seen, _, unread = run_checks([b"{}", b" " * 150], headers=[(b"content-length", b"201")])
    assert (status, seen, unread) == (413, None, 0)
    assert answer["error"] == "body: expected at most 200 bytes (the server's max_body_bytes), found 201 bytes"
    status, answer, seen, _, unread = run_checks([b" " * 150] * 6)
    assert (status, seen, answer["error"].endswith("found more"), unread) == (413, None, True, 0)


def test_the_checks_read_an_oversize_body_only_up_to_the_cap(monkeypatch):
    monkeypatch.setattr(api, "DRAIN_CAP_BYTES", 1000)
    status, _, _, _, unread = run_checks([b" " * 300] * 10)
    assert status == 413 and 0 < unread < 10 - 1000 // 300


def test_past_max_queue_a_request_gets_503_with_retry_after_and_the_count_comes_back_down():
    queued = multiprocessing.Value("i", 2)
    good = [json.dumps(BODIES[1]).encode()]
    status, answer, seen, headers, _ = run_checks(good, max_queue=2, queued=queued)
    assert (status, seen, headers[b"retry-after"]) == (503, None, b"1")
    assert answer == {"error": "server busy: 2 requests queued or decoding (the server's max_queue); retry after 1 s"}
    queued.value = 1
    assert run_checks(good, max_queue=2, queued=queued)[0] == 200 and queued.value == 1


def test_a_request_unanswered_past_the_timeout_gets_504_and_the_app_is_left_to_finish():
    good = [json.dumps(BODIES[1]).encode()]
    status, answer, seen, _, _ = run_checks(good, timeout=0.2, app_seconds=0.5, linger=0.6)
    assert (status, seen["finished"]) == (504, True)  # LitServe's handler finishes: it forgets the request
    assert answer == {"error": "request: expected an answer within 0.2 s (the server's timeout), found none"}
    assert run_checks(good, timeout=2, app_seconds=0.1)[0] == 200


def test_the_server_serves_the_page_at_the_root_and_the_api_with_its_checks(cfg):
    from hiersum.serving.server import build_server, page

    server = build_server(cfg)
    roots = [route for route in server.app.router.routes if getattr(route, "path", None) == "/"]
    assert len(roots) == 1 and roots[0].endpoint().body.decode() == page()
    assert '<form id="form">' in page() and 'fetch("summarize"' in page()
    assert 'id="sample-warning"' in page() and "answer.model.sample_corpus" in page()
    assert any(getattr(route, "path", None) == "/summarize" for route in server.app.router.routes)
    assert RequestChecks in [middleware.cls for middleware in server.app.user_middleware]
    assert server.uvicorn_graceful_timeout == cfg.shutdown_timeout
