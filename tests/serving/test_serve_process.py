"""``hiersum serve`` as a process on 127.0.0.1: 200 concurrent requests answered as ``hiersum summarize`` writes
the same records, bad requests among them refused in one line without changing any good answer, and SIGTERM
with requests in flight (answered, then exit 0), Ctrl-C in a terminal (SIGINT to the whole group) stops it."""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from hiersum.commands.summarize import summarize
from hiersum.serving.client import post_json
from tests.helpers.serving import assert_same_lines, server_log, start_server, stop_server

pytestmark = pytest.mark.slow

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
    with urllib.request.urlopen(request, timeout=30) as reply:
        text = reply.read().decode("utf-8")
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def value(samples: list, name: str, **labels: str) -> float:
    return sum(sample.value for sample in samples if sample.name == name and sample.labels.items() >= labels.items())


def test_a_server_with_a_key_refuses_without_it_answers_413_to_every_client_and_counts_its_load(
        checkpoint, tiny_corpus, tmp_path):
    examples = records(tiny_corpus)
    process, url = start_server(checkpoint, tmp_path / "server", f"api_key={KEY}", f"max_body_bytes={MAX_BODY_BYTES}",
                                *DECODE)
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

        scrapes = []
        with ThreadPoolExecutor(max_workers=16) as pool:
            replies = [pool.submit(post_json, f"{url}/summarize", examples[i % len(examples)], key=KEY)
                       for i in range(48)]
            while not all(reply.done() for reply in replies):
                scrapes.append(scrape(url))
                time.sleep(0.05)
            statuses = [reply.result()[0] for reply in replies]
        assert statuses == [200] * 48
        assert max(value(samples["hiersum_queue_depth"], "hiersum_queue_depth") for samples in scrapes) >= 2
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


def test_past_max_queue_requests_get_503_with_retry_after_and_a_request_past_its_timeout_504(checkpoint, tiny_corpus,
                                                                                             tmp_path):
    """One request decoded at a time (a long decode: beam 16, 2,500 tokens, raised limits: 1.1 s of the tiny model
    on one thread on an idle machine, where 800 tokens took 0.26 s, within the timeout: 2026-11-28), at most 2
    queued or decoding: of 6 sent at once, the 4 past the limit get 503 with Retry-After at once; with timeout=0.3 the
    2 let in get 504 in one line soon after 0.3 s (the HTTP process answers at the deadline, whatever the worker is
    doing; the worker gives the decode up at the same deadline)."""
    slow = {**records(tiny_corpus)[0], "options": {"beam_size": 16, "min_length": 2500, "max_length": 2500}}
    process, url = start_server(checkpoint, tmp_path / "server", "max_batch_size=1", "max_queue=2", "timeout=0.3",
                                "limits.beam_size=16", "limits.max_length=2500")
    try:
        def send(_: int) -> tuple[int, dict, str | None, float]:
            request = urllib.request.Request(f"{url}/summarize", data=json.dumps(slow).encode(), method="POST")
            start = time.monotonic()
            try:
                with urllib.request.urlopen(request, timeout=60) as reply:
                    return reply.status, json.loads(reply.read()), None, time.monotonic() - start
            except urllib.error.HTTPError as error:
                return error.code, json.loads(error.read()), error.headers.get("Retry-After"), time.monotonic() - start

        with ThreadPoolExecutor(max_workers=6) as pool:
            replies = list(pool.map(send, range(6)))
    finally:
        stop_server(process)
    busy = [reply for reply in replies if reply[0] == 503]
    late = [reply for reply in replies if reply[0] == 504]
    assert len(busy) == 4 and len(late) == 2, replies
    assert all(retry == "1" and answer["error"].startswith("server busy: 2 requests queued or decoding")
               for _, answer, retry, _ in busy)
    assert all(answer == {"error": "request: expected an answer within 0.3 s (the server's timeout), found none"}
               and seconds < 1.5 for _, answer, _, seconds in late), late
    assert process.returncode == 0, server_log(tmp_path / "server")


def stop_with_requests_queued(checkpoint: Path, tiny_corpus: Path, run_dir: Path, stop, *, requests: int,
                              after_first_answer: bool) -> tuple[int, list[tuple[int, dict, float]], float, str, tuple]:
    """Start a server that answers one slow request at a time (~0.5 s each: beam 16, 1,300 tokens on one thread,
    where beam 4 and 60 tokens, far shorter, left one of 16 requests unanswered in a make test of
    2026-11-28), send ``requests`` of them at once, call ``stop(process)`` once the first is answered
    (``after_first_answer``) or 0.3 s later (the first in the middle of its decode), try a new request 0.2 s after
    the stop, and wait for every answer and the exit: (exit status, (status, answer, time answered) of each reply,
    the time of the stop, the server's log, (the new request's status or error, when it was answered))."""
    example = records(tiny_corpus)[0]
    slow = {**example, "options": {"beam_size": 16, "min_length": 1300, "max_length": 1300}}
    process, url = start_server(checkpoint, run_dir, "max_batch_size=1", "shutdown_timeout=60", "limits.beam_size=16",
                                "limits.max_length=1300")
    replies: list[tuple[int, dict, float]] = []

    def send() -> None:
        status, answer = post_json(f"{url}/summarize", slow)
        replies.append((status, answer, time.monotonic()))

    threads = [threading.Thread(target=send) for _ in range(requests)]
    try:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + (60 if after_first_answer else 0.3)
        while not (after_first_answer and replies) and time.monotonic() < deadline:
            time.sleep(0.01)
        stopped = time.monotonic()
        stop(process)
        time.sleep(0.2)
        try:
            late = post_json(f"{url}/summarize", slow, timeout=10)[0]
        except (OSError, ValueError) as error:  # refused or reset (URLError is an OSError); 503 in plain text
            late = type(getattr(error, "reason", error)).__name__
        late_at = time.monotonic()
        for thread in threads:
            thread.join(timeout=120)
        process.wait(timeout=60)
    finally:
        stop_server(process)
    return process.returncode, replies, stopped, server_log(run_dir), (late, late_at)


def test_sigterm_refuses_new_connections_answers_the_requests_in_flight_then_exits_0(checkpoint, tiny_corpus,
                                                                                      tmp_path):
    status, replies, terminated, log, (late, late_at) = stop_with_requests_queued(
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
    _, replies, _, log, _ = stop_with_requests_queued(
        checkpoint, tiny_corpus, tmp_path / "server", lambda process: os.killpg(process.pid, signal.SIGINT),
        requests=3, after_first_answer=False)
    assert [code for code, _, _ in replies] == [200, 200, 200], log
    assert "KeyboardInterrupt" not in log and "died" not in log, log
    assert "hiersum serve: stopped" in log
