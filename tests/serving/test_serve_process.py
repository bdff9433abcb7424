"""``hiersum serve`` as a process on 127.0.0.1: 200 concurrent requests answered as ``hiersum summarize`` writes
the same records, bad requests among them refused in one line without changing any good answer, and SIGTERM
with requests in flight (answered, then exit 0), Ctrl-C in a terminal (SIGINT to the whole group) stops it.

No outcome here depends on how fast the machine is: where a test needs a request still queued or decoding while it
does something else, the request is held in the server's worker until the test opens its gate
(:mod:`tests.helpers.gated_serve`), and the test waits for what the server reports (``/metrics``), not for a time.
A time bound left is a guard against a hang, far past anything a loaded machine takes: a held request's server
``timeout`` is :data:`HELD_TIMEOUT` (under a load average of 11 on 2 cores, 16 requests took a minute to be let in).
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from hiersum.commands.summarize import summarize
from hiersum.serving.client import post_json
from tests.helpers.serving import (
    GATED,
    assert_same_lines,
    held_in_the_worker,
    open_gate,
    server_log,
    start_server,
    stop_server,
)

pytestmark = pytest.mark.slow

HANG_SECONDS = 300
"""How long :func:`wait_until` waits for what a server should report, and a held request for its answer."""
HELD_TIMEOUT = f"timeout={2 * HANG_SECONDS}"
"""The server option of the tests whose requests are held (not the 504 test's): no 504 while the test waits."""

DECODE = ["decode.beam_size=2", "decode.min_length=1", "decode.max_length=12"]
"""The server's decoding defaults (and summarize's): short summaries, a quick test."""
OPTION_SETS = {"default": ({}, []),
               "beam3": ({"beam_size": 3, "n_best": 2}, ["decode.beam_size=3", "decode.n_best=2"])}
"""Request options and the summarize options that ask for the same decoding."""
MAX_BODY_BYTES = 20_000
BAD_REQUESTS = [
    (b'{"documents": ["a"', 400, "body: expected a JSON object, found invalid JSON"),
    (b'"just a string"', 400, "body: expected a JSON object, found str"),
    ({"title": "no documents"}, 422, "field 'documents': expected a list of documents, found no such field"),
    ({"documents": []}, 422, "field 'documents': expected a non-empty list of documents, found an empty list"),
    ({"documents": [" ", ""]}, 422, "field 'documents': expected some text, found only empty documents"),
    ({"documents": [7]}, 422, "field 'documents[0]': expected a string or a list of paragraph strings, found int"),
    ({"text": ["not", "a", "string"]}, 422, "field 'text': expected a string, found list"),
    ({"text": "fine", "options": {"beam_size": 99}}, 422, "field 'options.beam_size': expected a value in [1, 8]"),
    ({"text": "fine", "options": {"max_length": "long"}}, 422, "field 'options.max_length': expected an integer"),
    ({"text": "x" * MAX_BODY_BYTES}, 413, f"body: expected at most {MAX_BODY_BYTES} bytes"),
]


def records(corpus: Path) -> list[dict]:
    lines = [line for split in ("test", "validation") for line in (corpus / f"{split}.jsonl").read_text().splitlines()]
    return [json.loads(line) for line in lines]


def summarize_lines(run_summarize, checkpoint: Path, source: Path, output: Path, options: list[str]) -> dict:
    run_summarize(f"checkpoint={checkpoint}", f"input={source}", f"output={output}", "attention=true",
                  "attention_top_k=3", *DECODE, *options)
    return {line["id"]: line for line in map(json.loads, output.read_text(encoding="utf-8").splitlines())}


@pytest.fixture()
def run_summarize(tiny_cfg, tmp_path):
    return lambda *args: summarize(tiny_cfg(*args, name="summarize", output_dir=tmp_path / "hydra"))


def test_200_concurrent_requests_equal_summarize_and_bad_ones_change_nothing(checkpoint, tiny_corpus, run_summarize,
                                                                             tmp_path):
    examples = records(tiny_corpus)
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(example) + "\n" for example in examples), encoding="utf-8")
    expected = {name: summarize_lines(run_summarize, checkpoint, source, tmp_path / f"{name}.jsonl", options)
                for name, (_, options) in OPTION_SETS.items()}
    good = [(name, example) for name in OPTION_SETS for example in examples]
    jobs = [("good", good[i % len(good)]) for i in range(200)] + [("bad", bad) for bad in BAD_REQUESTS * 4]
    random.Random(0).shuffle(jobs)
    process, url = start_server(checkpoint, tmp_path / "server", f"max_body_bytes={MAX_BODY_BYTES}",
                                "attention_top_k=3", *DECODE)
    try:
        def send(job):
            kind, item = job
            if kind == "bad":
                return post_json(f"{url}/summarize", item[0])
            name, example = item
            return post_json(f"{url}/summarize", {**example, "options": OPTION_SETS[name][0]})

        with ThreadPoolExecutor(max_workers=64) as pool:
            replies = list(pool.map(send, jobs))
        for (kind, item), (status, answer) in zip(jobs, replies, strict=True):
            if kind == "bad":
                assert status == item[1] and answer["error"].startswith(item[2]), (status, answer)
            else:
                name, example = item
                assert status == 200, answer
                assert_same_lines([answer], [expected[name][example["id"]]])
                assert answer["paragraphs"] and answer["model"]["decode"]["beam_size"] == (3 if name == "beam3" else 2)
        assert sum(kind == "good" for kind, _ in jobs) == 200
        status, answer = post_json(f"{url}/summarize", {**examples[0], "options": {}})  # and the next one is served
        assert status == 200 and answer["summary"] == expected["default"][examples[0]["id"]]["summary"]
    finally:
        stop_server(process)
    assert process.returncode == 0, server_log(tmp_path / "server")


KEY = "test-key"


def scrape(url: str) -> dict[str, list]:
    """The samples of ``/metrics``, by family name, as Prometheus's own parser (prometheus_client's) reads them."""
    request = urllib.request.Request(f"{url}/metrics", headers={"X-API-Key": KEY})
    with urllib.request.urlopen(request, timeout=HANG_SECONDS) as reply:
        text = reply.read().decode("utf-8")
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def value(samples: list, name: str, **labels: str) -> float:
    return sum(sample.value for sample in samples if sample.name == name and sample.labels.items() >= labels.items())


def queue_depth(url: str) -> float:
    """The requests past the checks and not yet answered, as ``/metrics`` reports them."""
    return value(scrape(url)["hiersum_queue_depth"], "hiersum_queue_depth")


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Wait for ``condition`` (polled); an ``AssertionError`` naming ``what`` if it does not hold within
    :data:`HANG_SECONDS` (a guard against a hang, not a timing)."""
    deadline = time.monotonic() + HANG_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not after {HANG_SECONDS} s"
        time.sleep(0.02)


def refuses_connections(url: str) -> bool:
    """Whether the server at ``url`` refuses (or resets) a new connection."""
    address = urllib.parse.urlsplit(url)
    try:
        socket.create_connection((address.hostname, address.port), timeout=10).close()
    except (ConnectionRefusedError, ConnectionResetError):
        return True
    except TimeoutError:  # not accepted yet: ask again
        return False
    return False


def post_with_retry_after(url: str, body: dict) -> tuple[int, dict, str | None]:
    """(status, JSON answer, ``Retry-After`` header) of a POST of ``body`` to ``url``."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=HANG_SECONDS) as reply:
            return reply.status, json.loads(reply.read()), reply.headers.get("Retry-After")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), error.headers.get("Retry-After")


def test_a_server_with_a_key_refuses_without_it_answers_413_to_every_client_and_counts_its_load(
        checkpoint, tiny_corpus, tmp_path):
    """... and counts its load: the first of 48 requests is held in the worker until the 16 clients' requests are all
    in (the queue depth 16), so the 15 behind it are decoded in batches whatever the machine's speed."""
    examples = records(tiny_corpus)
    gates = tmp_path / "gates"
    process, url = start_server(checkpoint, tmp_path / "server", f"api_key={KEY}", f"max_body_bytes={MAX_BODY_BYTES}",
                                HELD_TIMEOUT, *DECODE, gates=gates)
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=10) as reply:  # open to a load balancer
            assert reply.status == 200
        status, answer = post_json(f"{url}/summarize", examples[0])
        assert (status, answer) == (401, {"error": "header 'X-API-Key': expected the server's key, found none"})
        oversize = json.dumps({"text": "x" * 5_000_000}).encode()
        expected_413 = f"body: expected at most {MAX_BODY_BYTES} bytes (the server's max_body_bytes)"
        status, answer = post_json(f"{url}/summarize", oversize, key=KEY)  # urllib
        assert status == 413 and answer["error"].startswith(expected_413), answer
        for data in (oversize, iter([b" " * 100_000] * 50)):  # requests: with a Content-Length, then chunked
            reply = requests.post(f"{url}/summarize", data=data, headers={"X-API-Key": KEY}, timeout=60)
            assert reply.status_code == 413 and reply.json()["error"].startswith(expected_413), reply.text

        bodies = [{**examples[0], "id": f"{GATED}first"}, *(examples[i % len(examples)] for i in range(1, 48))]
        with ThreadPoolExecutor(max_workers=16) as pool:
            replies = [pool.submit(post_json, f"{url}/summarize", body, key=KEY, timeout=HANG_SECONDS)
                       for body in bodies]
            wait_until(lambda: queue_depth(url) == 16, "the queue depth of 16 clients' requests")
            open_gate(gates, f"{GATED}first")
            statuses = [reply.result()[0] for reply in replies]
        assert statuses == [200] * 48
        final = scrape(url)
        assert value(final["hiersum_requests"], "hiersum_requests_total", status="200") == 48
        assert value(final["hiersum_requests"], "hiersum_requests_total", status="413") == 3
        assert value(final["hiersum_requests"], "hiersum_requests_total", status="401") == 1
        assert value(final["hiersum_request_seconds"], "hiersum_request_seconds_count") == 52
        assert value(final["hiersum_batch_size"], "hiersum_batch_size_sum") == 48
        assert value(final["hiersum_batch_size"], "hiersum_batch_size_count") < 48  # batched
        assert value(final["hiersum_decode_tokens"], "hiersum_decode_tokens_total") >= 48  # min_length=1
        assert value(final["hiersum_decode_tokens_per_second"], "hiersum_decode_tokens_per_second") > 0
        assert value(final["hiersum_model_load_seconds"], "hiersum_model_load_seconds") > 0
        assert value(final["hiersum_queue_depth"], "hiersum_queue_depth") == 0
    finally:
        stop_server(process)
    assert process.returncode == 0, server_log(tmp_path / "server")


def test_past_max_queue_requests_get_503_with_retry_after(checkpoint, tiny_corpus, tmp_path):
    """At most 2 requests queued or decoding: while 2 are held (one in the worker, one queued behind it), each of 4
    more gets 503 with Retry-After at once; once the 2 are let go both are answered, and a request after them too."""
    example, gates = records(tiny_corpus)[0], tmp_path / "gates"
    process, url = start_server(checkpoint, tmp_path / "server", "max_batch_size=1", "max_queue=2", HELD_TIMEOUT,
                                *DECODE, gates=gates)
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            held = [pool.submit(post_json, f"{url}/summarize", {**example, "id": f"{GATED}{i}"}, timeout=HANG_SECONDS)
                    for i in range(2)]
            wait_until(lambda: queue_depth(url) == 2, "2 requests held")
            busy = [post_with_retry_after(f"{url}/summarize", {**example, "id": f"busy-{i}"}) for i in range(4)]
            for i in range(2):
                open_gate(gates, f"{GATED}{i}")
            answered = [reply.result() for reply in held]
        after = post_json(f"{url}/summarize", example)
    finally:
        stop_server(process)
    assert [status for status, _, _ in busy] == [503] * 4, busy
    assert all(retry == "1" and answer["error"].startswith("server busy: 2 requests queued or decoding")
               for _, answer, retry in busy), busy
    assert [status for status, _ in answered] == [200, 200] and after[0] == 200, (answered, after)
    assert process.returncode == 0, server_log(tmp_path / "server")


def test_a_request_past_its_timeout_gets_504_from_the_http_process_while_the_worker_holds_it(checkpoint, tiny_corpus,
                                                                                            tmp_path):
    """With timeout=0.3, a request the worker holds (it cannot answer) gets 504 in one line, no sooner than 0.3 s
    after it was sent: the HTTP process answers at the deadline, whatever the worker is doing. Let go, the worker
    gives the request up (its deadline passed) and answers the next one."""
    example, gates = records(tiny_corpus)[0], tmp_path / "gates"
    process, url = start_server(checkpoint, tmp_path / "server", "max_batch_size=1", "timeout=0.3", *DECODE,
                                gates=gates)
    try:
        started = time.monotonic()
        late = post_json(f"{url}/summarize", {**example, "id": f"{GATED}late"})
        seconds = time.monotonic() - started
        open_gate(gates, f"{GATED}late")
        after = post_json(f"{url}/summarize", example)
    finally:
        stop_server(process)
    assert late == (504, {"error": "request: expected an answer within 0.3 s (the server's timeout), found none"})
    assert seconds >= 0.3 and after[0] == 200, (seconds, after)
    assert process.returncode == 0, server_log(tmp_path / "server")


def stop_with_requests_held(checkpoint: Path, tiny_corpus: Path, run_dir: Path, stop, *, requests: int,
                            after_first_answer: bool) -> tuple[int, list[tuple[int, dict, float]], float, str, tuple]:
    """Start a server that answers one request at a time, each held in its worker until the test lets it go
    (:mod:`tests.helpers.gated_serve`); send ``requests`` of them at once and wait until the server holds them all;
    let the one the worker holds go and wait for its answer (``after_first_answer``), or not (that one then held in
    the middle of its decoding); call ``stop(process)``, try a new request once a connection is refused, then let the
    others go, and wait for every answer and the exit: (exit status, (status, answer, time answered) of each reply,
    the time of the stop, the server's log, (the new request's status or error, when it was answered))."""
    example, gates = records(tiny_corpus)[0], run_dir / "gates"
    process, url = start_server(checkpoint, run_dir, "max_batch_size=1", f"shutdown_timeout={HANG_SECONDS}",
                                HELD_TIMEOUT, *DECODE, gates=gates)
    replies: list[tuple[int, dict, float]] = []

    def send(index: int) -> None:
        status, answer = post_json(f"{url}/summarize", {**example, "id": f"{GATED}{index}"}, timeout=HANG_SECONDS)
        replies.append((status, answer, time.monotonic()))

    threads = [threading.Thread(target=send, args=(index,)) for index in range(requests)]
    try:
        for thread in threads:
            thread.start()
        wait_until(lambda: queue_depth(url) == requests, f"{requests} requests held")
        if after_first_answer:  # the one the worker took first (the server got it first, whichever was sent first)
            wait_until(lambda: bool(held_in_the_worker(gates)), "a request held in the worker")
            open_gate(gates, held_in_the_worker(gates)[0])
            wait_until(lambda: bool(replies), "the first answer")
        stopped = time.monotonic()
        stop(process)
        wait_until(lambda: refuses_connections(url), "new connections refused after the stop")
        try:
            late = post_json(f"{url}/summarize", example, timeout=10)[0]
        except (OSError, ValueError) as error:  # refused or reset (URLError is an OSError); 503 in plain text
            late = type(getattr(error, "reason", error)).__name__
        late_at = time.monotonic()
        for index in range(requests):
            open_gate(gates, f"{GATED}{index}")
        for thread in threads:
            thread.join(timeout=HANG_SECONDS)
        process.wait(timeout=HANG_SECONDS)
    finally:
        stop_server(process)
    return process.returncode, replies, stopped, server_log(run_dir), (late, late_at)


def test_sigterm_refuses_new_connections_answers_the_requests_in_flight_then_exits_0(checkpoint, tiny_corpus,
                                                                                      tmp_path):
    status, replies, terminated, log, (late, late_at) = stop_with_requests_held(
        checkpoint, tiny_corpus, tmp_path / "server", lambda process: process.terminate(), requests=16,
        after_first_answer=True)
    assert status == 0, log
    assert len(replies) == 16 and all(code == 200 for code, _, _ in replies), replies
    assert len({answer["summary"] for _, answer, _ in replies}) == 1
    assert max(finished for _, _, finished in replies) > terminated, "no request was in flight at the SIGTERM"
    assert late in ("ConnectionRefusedError", "ConnectionResetError", 503), late
    assert late_at < max(finished for _, _, finished in replies), "the new request waited for the drain to end"
    assert "hiersum serve: stopped" in log


def test_ctrl_c_to_the_whole_process_group_answers_the_requests_in_flight_and_stops(checkpoint, tiny_corpus,
                                                                                   tmp_path):
    """A terminal's Ctrl-C signals every process of the group at once (main, HTTP process, worker, manager): the
    main process stops them in order, after the requests in flight are answered, instead of each process dying
    on its own (which left the server hanging, or killed the worker in the middle of a decode)."""
    _, replies, _, log, _ = stop_with_requests_held(
        checkpoint, tiny_corpus, tmp_path / "server", lambda process: os.killpg(process.pid, signal.SIGINT),
        requests=3, after_first_answer=False)
    assert [code for code, _, _ in replies] == [200, 200, 200], log
    assert "KeyboardInterrupt" not in log and "died" not in log, log
    assert "hiersum serve: stopped" in log
