"""Request checks of ``hiersum serve`` (:func:`hiersum.serving.requests.read_request`): the record readers'
wording for a bad field, the server's limits on the options, and the answer built from a summarize line."""

from __future__ import annotations

import json

import pytest

from hiersum.config import DecodeConfig, ServeLimits
from hiersum.data.formats.native import parse_record
from hiersum.data.schema import RecordError
from hiersum.serving.requests import BadRequest, read_request

DEFAULTS = DecodeConfig()
LIMITS = ServeLimits(beam_size=6, max_length=50, n_best=3, no_repeat_ngram_size=3)


def read(body: bytes | dict) -> object:
    return read_request(body, defaults=DEFAULTS, limits=LIMITS)


def refusal(body: bytes | dict) -> BadRequest:
    with pytest.raises(BadRequest) as refused:
        read(body)
    assert "\n" not in str(refused.value)
    return refused.value


def test_a_native_record_and_a_text_read_as_the_batch_readers_read_them():
    request = read(json.dumps({"id": "x", "title": " T ", "documents": ["a b\n\n c  d", ["e", " "]]}).encode())
    assert (request.example.id, request.example.title, request.example.documents) == ("x", "T", [["a b", "c d"], ["e"]])
    assert request.decode == DEFAULTS
    text = read({"text": "one.\n\n\ntwo  words."})
    assert (text.example.id, text.example.documents) == ("request-1", [["one.", "two words."]])


@pytest.mark.parametrize(("body", "status", "message"), [
    (b"{bad", 400, "body: expected a JSON object, found invalid JSON"),
    (b"[1, 2]", 400, "body: expected a JSON object, found list"),
    (b"\xff{}", 400, "body: expected UTF-8 text, found invalid byte at 0"),
    ({"title": "t"}, 422, "field 'documents': expected a list of documents, found no such field"),
    ({"documents": []}, 422, "field 'documents': expected a non-empty list of documents, found an empty list"),
    ({"documents": "abc"}, 422, "field 'documents': expected a non-empty list of documents, found str"),
    ({"documents": [3]}, 422, "field 'documents[0]': expected a string or a list of paragraph strings, found int"),
    ({"documents": [" ", "\n\n"]}, 422, "field 'documents': expected some text, found only empty documents"),
    ({"documents": ["a"], "title": 5}, 422, "field 'title': expected a string, found int"),
    ({"text": 5}, 422, "field 'text': expected a string, found int"),
    ({"text": "  \n\n "}, 422, "field 'text': expected some text, found an empty document"),
    ({"text": "a", "id": [1]}, 422, "field 'id': expected a string, found list"),
    ({"text": "a", "options": [1]}, 422, "field 'options': expected a JSON object, found list"),
    ({"text": "a", "options": {"beam": 2}}, 422, "field 'options.beam': expected one of beam_size, max_length"),
    ({"text": "a", "options": {"beam_size": 7}}, 422,
     "field 'options.beam_size': expected a value in [1, 6] (the server's limit), found 7"),
    ({"text": "a", "options": {"beam_size": "2"}}, 422, "field 'options.beam_size': expected an integer, found str"),
    ({"text": "a", "options": {"beam_size": True}}, 422, "field 'options.beam_size': expected an integer, found bool"),
    ({"text": "a", "options": {"max_length": 51}}, 422, "field 'options.max_length': expected a value in [1, 50]"),
    ({"text": "a", "options": {"alpha": -1}}, 422, "field 'options.alpha': expected a value in [0.0, 2.0]"),
    ({"text": "a", "options": {"greedy": 1}}, 422, "field 'options.greedy': expected true or false, found int"),
    ({"text": "a", "options": {"n_best": 3, "beam_size": 2}}, 422, "field 'options': decode.n_best=3 must be in"),
])
def test_a_bad_request_is_refused_in_one_line_naming_the_field(body, status, message):
    refused = refusal(body)
    assert refused.status == status
    assert str(refused).startswith(message), str(refused)


def test_the_reason_is_the_batch_readers_own():
    record = {"documents": [3]}
    with pytest.raises(RecordError) as batch:
        parse_record(json.dumps(record), path="in.jsonl", line=7, require_summary=False)
    assert batch.value.reason in str(refusal(record))


def test_options_within_the_limits_change_only_what_they_name():
    request = read({"text": "a", "options": {"beam_size": 6, "n_best": 3, "max_length": 50, "min_length": 0,
                                             "alpha": 1, "no_repeat_ngram_size": 3}})
    assert (request.decode.beam_size, request.decode.n_best, request.decode.max_length, request.decode.min_length,
            request.decode.alpha, request.decode.no_repeat_ngram_size) == (6, 3, 50, 0, 1.0, 3)
    assert request.decode.stopping == DEFAULTS.stopping and request.decode.batch_size == DEFAULTS.batch_size
    assert read({"text": "a", "options": {"greedy": True}}).decode.greedy
    assert read({"text": "a"}).options_key() == read({"text": "b", "options": {}}).options_key()
    assert read({"text": "a"}).options_key() != read({"text": "a", "options": {"beam_size": 2}}).options_key()
