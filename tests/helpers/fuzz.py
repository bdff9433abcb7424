"""What the fuzz tests (``tests/data/test_formats_fuzzed.py``, ``tests/checkpoints/test_io_fuzzed.py``) share:
their Hypothesis settings, good records of each line format (with the :class:`Example` each must give), the bad
lines mixed between them, and the check that a reader's output holds records or one-line errors only."""

from __future__ import annotations

import json
import string
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from hiersum.data.schema import Example, RecordError

FUZZ = settings(max_examples=100, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
"""Every fuzz test: 100 examples, derandomized (the same inputs on every run and in CI), no time limit."""

WORD = st.text(alphabet=string.ascii_letters + string.digits + "é€–.,'", min_size=1, max_size=8)
PARAGRAPH = st.lists(WORD, min_size=1, max_size=6).map(" ".join)
PARAGRAPHS = st.lists(PARAGRAPH, min_size=1, max_size=3)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)
"""Any JSON value (a wrong type for any field)."""


@st.composite
def native_record(draw: Any, record_id: str) -> tuple[dict, Example]:
    documents = draw(st.lists(PARAGRAPHS, min_size=1, max_size=3))
    presplit = draw(st.booleans())
    title, summary = draw(WORD), draw(PARAGRAPH)
    record = {"id": record_id, "title": title, "summary": summary,
              "documents": documents if presplit else ["\n\n".join(document) for document in documents]}
    return record, Example(id=record_id, title=title, documents=documents, references=[summary])


@st.composite
def multinews_record(draw: Any, record_id: str) -> tuple[dict, Example]:
    documents = draw(st.lists(PARAGRAPHS, min_size=1, max_size=3))
    summary = draw(PARAGRAPH)
    record = {"id": record_id, "summary": f"– {summary}",
              "document": " ||||| ".join("\n \n".join(document) for document in documents)}
    return record, Example(id=record_id, title="", documents=documents, references=[summary])


@st.composite
def scitldr_record(draw: Any, record_id: str) -> tuple[dict, Example]:
    sentences, targets, title = draw(PARAGRAPHS), draw(PARAGRAPHS), draw(WORD)
    record = {"paper_id": record_id, "title": title, "source": sentences, "target": targets}
    return record, Example(id=record_id, title=title, documents=[sentences], references=targets)


GOOD_RECORDS: dict[str, Callable[[str], st.SearchStrategy[tuple[dict, Example]]]] = {
    "jsonl": native_record, "multinews": multinews_record, "scitldr": scitldr_record}
"""A good record of each line format (by ``data.format``), given its id, and the example it gives."""


@st.composite
def wrong_type_line(draw: Any, make_record: Callable[[str], st.SearchStrategy], record_id: str) -> bytes:
    """A good record of the format with one field (the id too) dropped, or replaced by a value of a wrong type
    or by a string that is no valid Unicode (a lone surrogate)."""
    record, _ = draw(make_record(record_id))
    field = draw(st.sampled_from(sorted(record)))
    change = draw(st.sampled_from(["drop", "wrong type", "lone surrogate"]))
    if change == "drop":
        del record[field]
    elif change == "wrong type":
        record[field] = draw(JSON_VALUE.filter(lambda value: not isinstance(value, str)))
    else:
        record[field] = f"{record_id} \ud800"
    return json.dumps(record).encode()


def bad_line(make_record: Callable[[str], st.SearchStrategy], record_id: str) -> st.SearchStrategy[bytes]:
    """A line that is no good record of the format (its id, where it has one, is ``record_id``)."""
    return st.one_of(
        st.binary(max_size=40),
        st.binary(min_size=1, max_size=20).map(lambda data: b"\xff" + data),  # invalid UTF-8
        JSON_VALUE.map(lambda value: json.dumps(value).encode()),
        wrong_type_line(make_record, record_id),
        st.sampled_from([
            b"", b"   \t", b"{", b"[" * 50_000, b'{"id": ' + b"9" * 5000 + b"}", b"x" * 300_000,
            json.dumps({"id": record_id, "documents": ["big " * 50_000]}).encode(),
        ]),
    ).map(lambda line: line.replace(b"\n", b" ").replace(b"\r", b" "))


@st.composite
def mixed_file(draw: Any, data_format: str) -> tuple[bytes, list[Example], int]:
    """(file content, the examples of its good records, its number of lines that are records): good
    records with bad lines at random places."""
    make_record = GOOD_RECORDS[data_format]
    goods = [draw(make_record(f"good-{index}")) for index in range(draw(st.integers(0, 5)))]
    lines = [json.dumps(record).encode() for record, _ in goods]
    for index in range(draw(st.integers(0, 5))):
        lines.insert(draw(st.integers(0, len(lines))), draw(bad_line(make_record, f"bad-{index}")))
    records = sum(1 for line in lines if _is_record_line(line))
    return b"".join(line + b"\n" for line in lines), [example for _, example in goods], records


def _is_record_line(line: bytes) -> bool:
    """Whether a reader gives a record (or an error) for ``line``: invalid UTF-8, or not blank."""
    try:
        return bool(line.decode("utf-8").strip())
    except UnicodeDecodeError:
        return True


@contextmanager
def written(content: bytes, name: str = "input.jsonl") -> Iterator[Path]:
    """A temporary file ``name`` holding ``content``."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(content)
        yield path


def check_records(items: Iterable[Any], goods: list[Example], records: int | None = None) -> list[Any]:
    """A reader's output: only examples (valid Unicode) and one-line record errors, one per record line
    (``records``), every good example among them, whole."""
    items = list(items)
    for item in items:
        assert isinstance(item, (Example, RecordError)), item
        if isinstance(item, RecordError):
            assert "\n" not in str(item)
        else:
            json.dumps(item.__dict__, ensure_ascii=False).encode("utf-8")  # writable as a UTF-8 output
    if records is not None:
        assert len(items) == records
    examples = {item.id: item for item in items if isinstance(item, Example)}
    for good in goods:
        assert examples.get(good.id) == good, (good, examples.get(good.id))
    return items
