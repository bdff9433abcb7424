"""Property-based tests of the input readers: whatever the bytes, a reader gives records or one-line
errors (a :class:`RecordError` per bad record, an :class:`InputError` or a :class:`UsageError` for a file
as a whole), never another exception, and a good record beside bad ones always comes out whole."""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path
from unittest import mock

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from hiersum.data.formats import InputError, read_records
from hiersum.data.formats.registry import format_spec
from hiersum.data.formats.wikisum import record_error, shard_records
from hiersum.data.schema import Example, RecordError
from hiersum.errors import UsageError
from tests.helpers.fuzz import FUZZ, GOOD_RECORDS, JSON_VALUE, PARAGRAPHS, check_records, mixed_file, written

pytestmark = pytest.mark.fuzz
INPUT_FORMATS = {"jsonl": "native", "multinews": "multinews", "scitldr": "scitldr"}


READERS = {
    "read_records": lambda path, data_format: read_records(path, input_format=INPUT_FORMATS[data_format]),
    "read_records auto": lambda path, data_format: read_records(path),
    "split reader": lambda path, data_format: format_spec(data_format).iter_split(path),
}
"""The ways a line format is read: as an input of summarize / rank (its format named, or detected past bad
lines: SciTLDR is not detected), and as a training split."""


@pytest.mark.parametrize(("reader", "data_format"), [(reader, data_format) for reader in sorted(READERS)
                                                     for data_format in sorted(GOOD_RECORDS)
                                                     if (reader, data_format) != ("read_records auto", "scitldr")])
@FUZZ
@given(data=st.data())
def test_a_line_format_keeps_its_good_records(reader, data_format, data):
    content, goods, records = data.draw(mixed_file(data_format))
    with written(content) as path:
        check_records(READERS[reader](path, data_format), goods, records if goods or "auto" not in reader else None)


@FUZZ
@given(content=st.binary(max_size=300), input_format=st.sampled_from(["auto", "text", *INPUT_FORMATS.values()]))
def test_standard_input_of_any_bytes(content, input_format):
    with mock.patch.object(sys, "stdin", io.TextIOWrapper(io.BytesIO(content))):
        check_records(read_records("-", input_format=input_format), [])


TEXT_FILE = st.one_of(st.binary(max_size=200).map(lambda data: (data, None)),
                      PARAGRAPHS.map(lambda paragraphs: ("\n\n".join(paragraphs).encode(), paragraphs)))
"""(the bytes of a .txt file, its paragraphs when they are good text)."""


@FUZZ
@given(files=st.lists(TEXT_FILE, max_size=5))
def test_a_folder_of_text_files_gives_one_record_a_file(files):
    with tempfile.TemporaryDirectory() as folder:
        for index, (content, _) in enumerate(files):
            Path(folder, f"{index:02d}.txt").write_bytes(content)
        if not files:
            with pytest.raises(InputError, match="expected .txt files in this folder, found none"):
                read_records(folder)
            return
        goods = [Example(f"{index:02d}", "", [paragraphs]) for index, (_, paragraphs) in enumerate(files) if paragraphs]
        items = check_records(read_records(folder), goods, len(files))
    assert [item.id if isinstance(item, Example) else item.record_id for item in items] == [
        f"{index:02d}" for index in range(len(files))]


SHARD_RECORD = st.builds(lambda src, tgt: {"src": src, "tgt": tgt, "tgt_str": "s"},
                         st.lists(st.lists(st.integers(0, 100), max_size=4), max_size=3),
                         st.lists(st.integers(0, 100), max_size=4))


@FUZZ
@given(goods=st.lists(SHARD_RECORD, max_size=4), bads=st.lists(JSON_VALUE, max_size=4), data=st.data())
def test_a_wikisum_shard_keeps_its_good_records(goods, bads, data):
    records: list = list(goods)
    for bad in bads:
        records.insert(data.draw(st.integers(0, len(records))), bad)
    with written(b"", "WIKI.train.0.pt") as path:
        torch.save(records, path)
        items = list(shard_records(path))
    assert len(items) == len(records)
    for index, (item, record) in enumerate(zip(items, records, strict=True)):
        if record_error(record, path, index) is None:
            assert item == record
        else:
            assert isinstance(item, RecordError) and item.line == index and "\n" not in str(item)


@FUZZ
@given(content=st.binary(max_size=400), cut=st.integers(0, 10_000))
def test_a_wikisum_shard_of_any_bytes_is_records_or_one_error(content, cut):
    with written(b"", "WIKI.train.0.pt") as path:
        if cut % 2:  # a truncated shard instead
            torch.save([{"src": [[1, 2]], "tgt": [4, 5], "tgt_str": "a"}] * 3, path)
            data = path.read_bytes()
            content = data[: cut % len(data)]
        path.write_bytes(content)
        try:
            items = list(shard_records(path))
        except UsageError as error:  # the shard as a whole: TorchFileError
            assert "\n" not in str(error) and str(path) in str(error) and "weights_only=False" not in str(error)
            return
    assert all(isinstance(item, (dict, RecordError)) for item in items)
