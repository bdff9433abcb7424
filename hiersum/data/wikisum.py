"""Reader of the ranked WikiSum release of Liu & Lapata (the official training data).

A split is a set of shards ``<prefix>.{train,valid,test}.N.pt`` (the release uses the prefix
``WIKI``), each a ``torch.save``d list of records ``{"src", "tgt", "tgt_str"}``:

- ``src``: the paragraphs, ranked, each a list of SentencePiece ids (``spm9998_3.model``);
- ``tgt``: the summary ids ``[BOS=4, ..., EOS=5]`` with ``<Q>`` (8) between sentences;
- ``tgt_str``: the summary text.

Shards are loaded with ``torch.load(weights_only=True)`` (plain lists, dicts and ints), in
shard-number order, all into memory. The kept paragraphs are the first ``max_paragraphs`` (the
ranking order), each cut to ``max_paragraph_tokens``; the target is ``tgt`` without BOS/EOS, cut to
``max_target_tokens``. The release does not say which source document a paragraph came from, so
the provenance of the paragraph of rank r is ``(0, r)``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

from hiersum.data.graph import paragraph_graph
from hiersum.data.schema import EncodedExample, Example
from hiersum.data.selection import SelectionConfig
from hiersum.data.tokenizer import SubwordTokenizer

SPLIT_NAMES = {"train": "train", "validation": "valid", "test": "test"}
"""hiersum split -> the release's split name."""

_SHARD = re.compile(r"^(?P<prefix>.+)\.(?P<split>train|valid|test)\.(?P<index>\d+)\.pt$")


def shard_paths(directory: str | Path, split: str) -> list[Path]:
    """The shards ``*.{train|valid|test}.N.pt`` of ``split`` in ``directory``, by shard number."""
    name = SPLIT_NAMES.get(split)
    if name is None:
        raise ValueError(f"unknown split {split!r}: expected one of {sorted(SPLIT_NAMES)}")
    matches = [(m, path) for path in Path(directory).glob(f"*.{name}.*.pt") if (m := _SHARD.match(path.name))]
    if not matches:
        raise FileNotFoundError(f"WikiSum split '{split}' not found: expected files {directory}/WIKI.{name}.N.pt")
    return [path for m, path in sorted(matches, key=lambda mp: (mp[0]["prefix"], int(mp[0]["index"])))]


def _ids(value: Any, where: str, field: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(i, int) for i in value):
        raise ValueError(f"{where}: field '{field}': expected a list of token ids, found {type(value).__name__}")
    return value


def load_shard(path: str | Path) -> list[dict[str, Any]]:
    """The records of one shard, validated (``src`` a list of id lists, ``tgt`` an id list)."""
    records = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a list of records, found {type(records).__name__}")
    for index, record in enumerate(records):
        where = f"{path}: record {index}"
        if not isinstance(record, dict) or "src" not in record or "tgt" not in record:
            raise ValueError(f"{where}: expected a dict with 'src', 'tgt' and 'tgt_str'")
        if not isinstance(record["src"], list):
            found = type(record["src"]).__name__
            raise ValueError(f"{where}: field 'src': expected a list of paragraphs, found {found}")
        for p, paragraph in enumerate(record["src"]):
            _ids(paragraph, where, f"src[{p}]")
        _ids(record["tgt"], where, "tgt")
    return records


def encode_record(
    record: dict[str, Any],
    *,
    example_id: str,
    tokenizer: SubwordTokenizer,
    config: SelectionConfig,
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
    )
    return example, encoded


def read_wikisum(
    directory: str | Path, split: str, tokenizer: SubwordTokenizer, config: SelectionConfig, *, with_text: bool
) -> tuple[list[Example], list[EncodedExample]]:
    """All records of a split as (examples, encoded examples); ids are ``<shard stem>-<index>``."""
    examples, encoded = [], []
    for path in shard_paths(directory, split):
        stem = path.name.removesuffix(".pt")
        for index, record in enumerate(load_shard(path)):
            example, item = encode_record(
                record, example_id=f"{stem}-{index}", tokenizer=tokenizer, config=config, with_text=with_text
            )
            examples.append(example)
            encoded.append(item)
    return examples, encoded
