"""Reader of the ranked WikiSum release of Liu & Lapata (the official training data).

A split is a set of shards ``<prefix>.{train,valid,test}.N.pt`` (the release uses the prefix
``WIKI``), each a ``torch.save``d list of records ``{"src", "tgt", "tgt_str"}``:

- ``src``: the paragraphs, ranked, each a list of SentencePiece ids (``spm9998_3.model``);
- ``tgt``: the summary ids ``[BOS=4, ..., EOS=5]`` with ``<Q>`` (8) between sentences;
- ``tgt_str``: the summary text.

Shards are loaded with ``torch.load(weights_only=True)`` (plain lists, dicts and ints;
:func:`hiersum.data.torch_files.load_torch_file`: a shard that is not such a file raises a one-line
:class:`~hiersum.data.torch_files.TorchFileError`), in shard-number order, one at a time
(:func:`iter_wikisum`; a split is never held in memory whole). A malformed record is a
:class:`RecordError` whose "line" is the record's index in its shard (the suffix of its id
``<shard stem>-<index>``). The kept paragraphs are the first ``max_paragraphs`` (the ranking order), each
cut to ``max_paragraph_tokens``; the target is ``tgt`` without BOS/EOS, cut to ``max_target_tokens``. The
release does not say which source document a paragraph came from, so the provenance of the paragraph of
rank r is ``(0, r)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hiersum.data.formats.arrow import Column, corpus_layout, iter_rows, split_files
from hiersum.data.graph import paragraph_graph
from hiersum.data.schema import DATA_DOCS, EncodedExample, Example, RecordError
from hiersum.data.selection import EncodingConfig
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.data.torch_files import TorchFileError, describe_object, load_torch_file

SPLIT_NAMES = {"train": "train", "validation": "valid", "test": "test"}
"""hiersum split -> the release's split name."""

COLUMNS = (Column("src", ("list<list<integer>>",), required=True), Column("tgt", ("list<integer>",), required=True),
           Column("tgt_str", ("string",)))
"""The columns of a ``datasets`` corpus of WikiSum records (``save_to_disk`` or parquet, as the shards' records)."""
SHARD_EXPECTED = "a WikiSum shard (a torch file holding a list of {'src', 'tgt', 'tgt_str'} records)"
"""The ``expected ...`` of a shard's :class:`TorchFileError`."""
_SHARD = re.compile(r"^(?P<prefix>.+)\.(?P<split>train|valid|test)\.(?P<index>\d+)\.pt$")


def shard_paths(directory: str | Path, split: str) -> list[Path]:
    """The shards ``*.{train|valid|test}.N.pt`` of ``split`` in ``directory``, by shard number."""
    name = SPLIT_NAMES.get(split)
    if name is None:
        raise ValueError(f"unknown split {split!r}: expected one of {sorted(SPLIT_NAMES)}")
    matches = [(m, path) for path in Path(directory).glob(f"*.{name}.*.pt") if (m := _SHARD.match(path.name))]
    if not matches:
        raise FileNotFoundError(
            f"WikiSum split '{split}' not found: expected files {directory}/WIKI.{name}.N.pt (see {DATA_DOCS})"
        )
    return [path for m, path in sorted(matches, key=lambda mp: (mp[0]["prefix"], int(mp[0]["index"])))]


def _ids(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(i, int) for i in value)


def record_error(record: Any, path: Path, index: int) -> RecordError | None:
    """What is wrong with record ``index`` of shard ``path`` (``src`` a list of id lists, ``tgt`` an id
    list), or None."""
    def error(field: str | None, message: str) -> RecordError:
        return RecordError(str(path), index, field, message, record_id=f"{path.stem}-{index}")

    if not isinstance(record, dict) or "src" not in record or "tgt" not in record:
        return error(None, f"expected a dict with 'src', 'tgt' and 'tgt_str', found {type(record).__name__}")
    if not isinstance(record["src"], list):
        return error("src", f"expected a list of paragraphs, found {type(record['src']).__name__}")
    for p, paragraph in enumerate(record["src"]):
        if not _ids(paragraph):
            return error(f"src[{p}]", f"expected a list of token ids, found {type(paragraph).__name__}")
    if not _ids(record["tgt"]):
        return error("tgt", f"expected a list of token ids, found {type(record['tgt']).__name__}")
    return None


def _shard_list(path: Path) -> list[Any]:
    records = load_torch_file(path, expected=SHARD_EXPECTED, noun="shard")
    if not isinstance(records, list):
        raise TorchFileError(path, f"holds {describe_object(records)}, not a list", SHARD_EXPECTED)
    return records


def shard_records(path: str | Path) -> Iterator[dict[str, Any] | RecordError]:
    """The records of one shard, each validated: the record, or the :class:`RecordError` saying what is wrong; a
    shard that is not a torch file of a list raises :class:`TorchFileError`."""
    path = Path(path)
    for index, record in enumerate(_shard_list(path)):
        yield record_error(record, path, index) or record


def _split_records(directory: str | Path, split: str) -> Iterator[tuple[Path, int, Any]]:
    """``(file, index, record)`` of every record of a split: of its shards (index from 0), or of the rows of a
    ``datasets`` corpus of ``COLUMNS`` (row number from 1; :mod:`hiersum.data.formats.arrow`)."""
    if corpus_layout(directory) is not None:
        files = split_files(directory, (split, SPLIT_NAMES.get(split, split)))
        yield from iter_rows(files, COLUMNS, require_references=True)
        return
    for path in shard_paths(directory, split):
        yield from ((path, index, record) for index, record in enumerate(_shard_list(path)))


def load_shard(path: str | Path) -> list[dict[str, Any]]:
    """The records of one shard; the first malformed one raises its :class:`RecordError`."""
    records = []
    for item in shard_records(path):
        if isinstance(item, RecordError):
            raise item
        records.append(item)
    return records


def encode_record(
    record: dict[str, Any],
    *,
    example_id: str,
    tokenizer: SubwordTokenizer,
    config: EncodingConfig,
    with_text: bool,
) -> tuple[Example, EncodedExample]:
    """One record as (text ``Example``, ``EncodedExample``). ``with_text``: decode the kept paragraphs
    into ``Example.documents`` (for the lead baseline and paragraph graphs); else documents are empty."""
    kept = record["src"][: config.max_paragraphs]
    paragraphs = [list(p[: config.max_paragraph_tokens]) for p in kept]
    target = list(record["tgt"])
    if target[:1] == [tokenizer.special.bos]:
        target = target[1:]
    if target[-1:] == [tokenizer.special.eos]:
        target = target[:-1]
    texts = [tokenizer.decode(p) for p in kept] if with_text or config.graph != "none" else []
    reference = str(record.get("tgt_str") or tokenizer.decode(target))
    example = Example(id=example_id, title="", documents=[texts] if with_text else [[]], references=[reference])
    encoded = EncodedExample(
        id=example_id,
        paragraphs=paragraphs,
        target=target[: config.max_target_tokens],
        references=[reference],
        provenance=[(0, rank) for rank in range(len(paragraphs))],
        n_dropped_paragraphs=len(record["src"]) - len(kept),
        graph=paragraph_graph(texts, config.graph),
        target_truncated=len(target) > config.max_target_tokens,
    )
    return example, encoded


def iter_wikisum(
    directory: str | Path, split: str, tokenizer: SubwordTokenizer, config: EncodingConfig, *, with_text: bool
) -> Iterator[tuple[Example, EncodedExample] | RecordError]:
    """(example, encoded example) of every record of a split, shard after shard (one shard in memory at
    a time), or the :class:`RecordError` of a malformed record; ids are ``<shard stem>-<index>``. A ``datasets``
    corpus of the same records (columns ``src``, ``tgt``, ``tgt_str``) is read row by row, ids
    ``<file stem>-<row>``."""
    for path, index, record in _split_records(directory, split):
        error = record_error(record, path, index)
        if error is not None:
            yield error
            continue
        yield encode_record(
            record, example_id=f"{path.stem}-{index}", tokenizer=tokenizer, config=config, with_text=with_text
        )


def read_wikisum(
    directory: str | Path, split: str, tokenizer: SubwordTokenizer, config: EncodingConfig, *, with_text: bool
) -> tuple[list[Example], list[EncodedExample]]:
    """All records of a split as (examples, encoded examples) (:func:`iter_wikisum`, the first malformed
    record raising its :class:`RecordError`)."""
    examples, encoded = [], []
    for item in iter_wikisum(directory, split, tokenizer, config, with_text=with_text):
        if isinstance(item, RecordError):
            raise item
        examples.append(item[0])
        encoded.append(item[1])
    return examples, encoded
