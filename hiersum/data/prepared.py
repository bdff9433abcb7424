"""Prepared data on disk (the folder ``data.cache_dir``): prepared corpora, the tokenizer trained on a corpus,
the ranker's labels; each in a folder whose name hashes what its content depends on.

Prepared corpora: each split read, checked, tokenized and cut once, then kept on disk in
memory-mappable arrays that training and evaluation read lazily, one example at a time.

A prepared split is a folder ``<data.cache_dir>/<corpus>-<split>-<key>`` whose ``key`` fingerprints what
its content depends on (:func:`split_manifest`): the input files (path, size and modification time), the
data format (for ``line_pairs`` with its layout: separators, markers, prefix), the paragraph selection of the split
(``data.max_paragraphs`` or ``data.eval_max_paragraphs``, ``max_paragraph_tokens``,
``max_target_tokens``, ``paragraphs``, ``selection``, ``title_paragraph``, the model's
paragraph ``graph``; with ``selection=ranker`` the ranker checkpoint's path, size and modification time) and the
tokenizer (a hash of its JSON). Change any of them and the name changes, so a stale folder is never read;
the same settings find the folder again and nothing is re-read. The folder holds::

    manifest.json      what the key was made of, the example and shard counts (written last)
    lengths.bin        int32 [N, 3]: paragraph count, longest paragraph, target length (the length index)
    errors.jsonl       the malformed records left out (data.on_error=skip), one RecordError.as_record a line
    shard-00000/       the examples [k * SHARD_EXAMPLES, (k + 1) * SHARD_EXAMPLES):
      paragraph_tokens.bin    int32: the ids of every kept paragraph, one after the other
      paragraph_offsets.bin   int64 [paragraphs + 1]: where each paragraph starts in paragraph_tokens
      example_paragraphs.bin  int64 [examples + 1]: each example's first paragraph
      target_tokens.bin       int32, target_offsets.bin int64 [examples + 1]: the targets, likewise
      records.jsonl           the rest of each example, one JSON object a line: id, references, provenance,
                              dropped paragraph count, whether the target was cut, graph; and for validation /
                              test its text (title, documents: the lead / oracle / LexRank baselines and the
                              reports)
      record_offsets.bin      int64 [examples + 1]: the byte offset of each line of records.jsonl

A split is written into a temporary folder, streamed (a chunk of :data:`ENCODE_CHUNK` examples, or one
WikiSum shard, in memory at a time), and renamed into place once complete
(:func:`hiersum.atomic.publishing_directory`), under a file lock (``flock``, through filelock): a killed
preparation leaves no folder that looks complete, and the processes of a DDP run (or two runs) that
want the same split wait for the first one instead of preparing it again. The tokenizer trained on a
corpus (:func:`hiersum.data.corpus_tokenizer.corpus_tokenizer`) and the ranker's labels
(:func:`hiersum.data.ranker_data.split_labels`) are cached likewise, one file in a folder (:func:`cached_text`).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, BinaryIO, overload

import numpy as np
from filelock import FileLock
from torch.utils.data import Dataset

from hiersum.atomic import publishing_directory
from hiersum.config import DataConfig, OnError, Paragraphs, TextNormalization
from hiersum.data.batching import LENGTH_FIELDS
from hiersum.data.encoded_chunk import (
    OFFSET_DTYPE,
    TOKEN_DTYPE,
    EncodedChunk,
    EncodingSettings,
    encode_chunk,
    encode_in_process,
    encoded_chunk,
    init_tokenizing_process,
    scorer_module,
)
from hiersum.data.formats.registry import corpus_normalization, data_format, format_options, format_spec
from hiersum.data.paragraphs import LONG_SENTENCES
from hiersum.data.sample_location import cache_root
from hiersum.data.schema import EncodedExample, Example, RecordError
from hiersum.data.selection import EncodingConfig, encoding_config
from hiersum.data.tokenizer import SubwordTokenizer

PREPARED_VERSION = 2
"""Version of the on-disk layout (part of every key: a new layout never reads an old folder)."""
SHARD_EXAMPLES = 8192
"""Examples per shard folder."""
ENCODE_CHUNK = 256
"""Examples tokenized per call of the tokenizer while preparing."""
MANIFEST = "manifest.json"


PREPARED_DIR_VARIABLE = "HIERSUM_PREPARED_DIR"
"""Environment variable naming the folder of the prepared corpora when ``data.cache_dir`` is not given
(a scratch disk of a cluster; the test suite's temporary folder)."""


def prepared_root(config: DataConfig) -> Path:
    """``data.cache_dir``, else ``$HIERSUM_PREPARED_DIR``, else ``$XDG_CACHE_HOME/hiersum/prepared``."""
    folder = config.cache_dir or os.environ.get(PREPARED_DIR_VARIABLE)
    return Path(folder) if folder else cache_root() / "prepared"


def file_fingerprints(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Path, size and modification time (ns) of each file: a file rewritten or touched changes them."""
    fingerprints = []
    for path in paths:
        stat = path.stat()
        fingerprints.append({"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})
    return fingerprints


def tokenizer_digest(tokenizer: SubwordTokenizer) -> str:
    """A hash of the tokenizer's JSON and special tokens (equal for a tokenizer saved and loaded again)."""
    text = "\0".join([tokenizer.to_str(), *tokenizer.tokens])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def key_digest(value: Any) -> str:
    """16 hex digits of the SHA-256 of ``value`` as sorted JSON: the part of a cache folder's name its key makes."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def split_manifest(
    config: DataConfig, split: str, tokenizer: SubwordTokenizer, *, graph: str = "none", copy_oov: bool = False
) -> dict[str, Any]:
    """What the prepared ``split`` depends on (its folder's name is a hash of it); a missing input file
    raises FileNotFoundError. ``graph`` and ``copy_oov``: the model's (``model.graph``, ``model.copy_oov``)."""
    selection = replace(encoding_config(config, graph=str(graph), copy_oov=copy_oov, evaluation=split != "train"),
                        text_normalization=corpus_normalization(config))
    return {
        "version": PREPARED_VERSION,
        "format": config.format,
        **layout_key(config),
        "split": split,
        "inputs": file_fingerprints(format_spec(config.format).input_files(config.path, split)),
        "selection": _selection_key(selection),
        # under paragraphs=sentences, what the rule does with a long sentence: the corpora prepared when it cut one
        # are not read again (the keys of the others unchanged)
        **({"long_sentences": LONG_SENTENCES} if selection.paragraphs is Paragraphs.sentences else {}),
        "tokenizer": tokenizer_digest(tokenizer),
        "with_text": split != "train",
        # a ranker's checkpoint, only when one orders the paragraphs (the keys of other splits unchanged)
        **({"ranker": file_fingerprints([Path(selection.ranker)])} if selection.ranker else {}),
        **({"every_reference": True} if config.every_reference and split == "train" else {}),
    }


def _selection_key(selection: EncodingConfig) -> dict[str, Any]:
    """The selection settings of a prepared split's key, an Enum as its value; ``text_normalization`` only when it
    normalizes and ``copy_oov`` only when on (the keys of the corpora prepared before they existed unchanged)."""
    key = {name: str(value) if isinstance(value, str) else value for name, value in asdict(selection).items()}
    if selection.text_normalization is TextNormalization.none:
        del key["text_normalization"]
    if not selection.copy_oov:
        del key["copy_oov"]
    return key


def layout_key(config: DataConfig) -> dict[str, Any]:
    """``{"layout": ...}``: the values of the data fields the format's reader takes (the line-pair layout's
    separators, :func:`hiersum.data.formats.registry.format_options`), for a key; empty for the other formats, whose
    keys stay as they were."""
    options = format_options(config)
    return {"layout": options} if options else {}


def split_folder(config: DataConfig, manifest: dict[str, Any]) -> Path:
    """``<cache>/<corpus folder name>-<split>-<hash of the manifest>``."""
    corpus = Path(config.path).resolve().name or "corpus"
    return prepared_root(config) / f"{corpus}-{manifest['split']}-{key_digest(manifest)}"


def _locked(folder: Path) -> FileLock:
    """The exclusive lock of ``folder``'s preparation: ``flock`` on ``<folder>.lock`` (created; filelock's
    ``UnixFileLock``), held for a ``with`` block, the other processes waiting; the kernel releases it when its
    holder dies, however it dies."""
    path = folder.with_name(folder.name + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(path, fallback_to_soft=False)


def cached_text(folder: Path, name: str, key: dict[str, Any], make: Callable[[], str]) -> Path:
    """``<folder>/<name>``, written once with the text ``make()`` returns (``key.json`` beside it: what the
    folder's name hashes) by the first process to ask, the others waiting for it; found there afterwards."""
    path = folder / name
    if not path.is_file():
        with _locked(folder):
            if not path.is_file():
                text = make()
                with publishing_directory(folder, remove_stale=True) as temporary:  # under the lock
                    (temporary / "key.json").write_text(json.dumps(key, indent=1), encoding="utf-8")
                    (temporary / name).write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------- writing


class _ShardWriter:
    """Appends chunks of examples to the files of one shard folder."""

    OFFSETS = ("paragraph_offsets", "example_paragraphs", "target_offsets", "record_offsets")
    """The files of offsets (each starts with 0)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir()
        self.folder = folder
        names = ("paragraph_tokens", *self.OFFSETS, "target_tokens")
        self.files: dict[str, BinaryIO] = {name: open(folder / f"{name}.bin", "wb") for name in names}
        self.records = open(folder / "records.jsonl", "wb")
        self.n_examples = self.n_paragraphs = self.n_tokens = self.n_target_tokens = self.n_bytes = 0
        for name in self.OFFSETS:
            np.zeros(1, dtype=OFFSET_DTYPE).tofile(self.files[name])

    def add(self, chunk: EncodedChunk) -> None:
        line_bytes = np.fromiter(map(len, chunk.record_lines), dtype=OFFSET_DTYPE, count=len(chunk))
        written = {
            "paragraph_tokens": chunk.paragraph_tokens,
            "paragraph_offsets": self.n_tokens + np.cumsum(chunk.paragraph_lengths, dtype=OFFSET_DTYPE),
            "example_paragraphs": self.n_paragraphs + np.cumsum(chunk.example_paragraphs, dtype=OFFSET_DTYPE),
            "target_tokens": chunk.target_tokens,
            "target_offsets": self.n_target_tokens + np.cumsum(chunk.target_lengths, dtype=OFFSET_DTYPE),
            "record_offsets": self.n_bytes + np.cumsum(line_bytes, dtype=OFFSET_DTYPE),
        }
        for name, values in written.items():
            dtype = TOKEN_DTYPE if name.endswith("_tokens") else OFFSET_DTYPE
            values.astype(dtype, copy=False).tofile(self.files[name])
        self.records.write(b"".join(chunk.record_lines))
        self.n_examples += len(chunk)
        self.n_paragraphs += len(chunk.paragraph_lengths)
        self.n_tokens += len(chunk.paragraph_tokens)
        self.n_target_tokens += len(chunk.target_tokens)
        self.n_bytes += int(line_bytes.sum())

    def close(self) -> None:
        for handle in [*self.files.values(), self.records]:
            handle.close()


class _SplitWriter:
    """Writes a split's shards and its length index into ``folder``."""

    def __init__(self, folder: Path, *, shard_examples: int) -> None:
        self.folder = folder
        self.shard_examples = shard_examples
        self.lengths = open(folder / "lengths.bin", "wb")
        self.shard_sizes: list[int] = []
        self.shard: _ShardWriter | None = None

    def add(self, chunk: EncodedChunk) -> None:
        """The chunk's examples, in order: a shard is closed at ``shard_examples`` and the next one started."""
        start = 0
        while start < len(chunk):
            if self.shard is None or self.shard.n_examples == self.shard_examples:
                self._close_shard()
                self.shard = _ShardWriter(self.folder / f"shard-{len(self.shard_sizes):05d}")
            stop = min(len(chunk), start + self.shard_examples - self.shard.n_examples)
            part = chunk if (start, stop) == (0, len(chunk)) else chunk.part(start, stop)
            self.shard.add(part)
            part.lengths.astype(TOKEN_DTYPE, copy=False).tofile(self.lengths)
            start = stop

    def _close_shard(self) -> None:
        if self.shard is not None:
            self.shard.close()
            self.shard_sizes.append(self.shard.n_examples)
            self.shard = None

    def close(self) -> list[int]:
        """Close every file; the example count of each shard."""
        self._close_shard()
        self.lengths.close()
        return self.shard_sizes


def one_per_reference(example: Example) -> list[Example]:
    """``example`` once per reference, each copy with that reference only (ids ``<id>``, ``<id>#2``...;
    an example without references: itself)."""
    if len(example.references) <= 1:
        return [example]
    return [replace(example, id=example.id if k == 1 else f"{example.id}#{k}", references=[reference])
            for k, reference in enumerate(example.references, start=1)]


def encoded_chunks(
    config: DataConfig, split: str, tokenizer: SubwordTokenizer, selection: EncodingConfig, *, with_text: bool,
    every_reference: bool = False, workers: int = 1,
) -> Iterator[EncodedChunk | RecordError]:
    """The records of ``split`` encoded, in order, in chunks of :data:`ENCODE_CHUNK` examples (the last one
    shorter, maybe empty), and the :class:`RecordError` of each malformed record when it is read; with
    ``workers`` > 1 at most ``2 * workers`` chunks in flight, tokenized by that many processes (the same results,
    in the same order). ``every_reference``: a record with several references gives one example per reference
    (:func:`one_per_reference`; formats read as token ids, WikiSum, have one reference)."""
    spec = data_format(config)
    if spec.read_encoded is not None:
        yield from _pairs_in_chunks(spec.read_encoded(config.path, split, tokenizer, selection, with_text=with_text),
                                    with_text=with_text)
        return
    items = _chunks(spec.split_records(config.path, split), every_reference=every_reference)
    if workers == 1:
        for item in items:
            yield item if isinstance(item, RecordError) else encode_chunk(item, tokenizer, selection, with_text)
        return
    yield from _encoded_in_processes(items, (tokenizer, selection, with_text), workers)


def _pairs_in_chunks(items: Iterable[tuple[Example, EncodedExample] | RecordError], *, with_text: bool
                     ) -> Iterator[EncodedChunk | RecordError]:
    """Pairs read already encoded (WikiSum), in chunks of :data:`ENCODE_CHUNK`, and each error when it comes."""
    for item in _in_chunks(items, lambda pair: [pair]):
        yield item if isinstance(item, RecordError) else encoded_chunk(item, with_text=with_text)


def _chunks(records: Iterable[Example | RecordError], *, every_reference: bool
            ) -> Iterator[list[Example] | RecordError]:
    """The examples of ``records`` in chunks of :data:`ENCODE_CHUNK` (the last one shorter, maybe empty), and
    each malformed record when it is read."""
    return _in_chunks(records, one_per_reference if every_reference else lambda example: [example])


def _in_chunks(items: Iterable[Any], expand: Callable[[Any], list[Any]]) -> Iterator[list[Any] | RecordError]:
    """What ``expand`` makes of each item of ``items``, in lists of :data:`ENCODE_CHUNK` (the last one shorter,
    maybe empty), and each :class:`RecordError` of ``items`` when it comes."""
    chunk: list[Any] = []
    for item in items:
        if isinstance(item, RecordError):
            yield item
            continue
        chunk += expand(item)
        if len(chunk) >= ENCODE_CHUNK:
            yield chunk
            chunk = []
    yield chunk


def _encoded_in_processes(items: Iterator[list[Example] | RecordError], settings: EncodingSettings, workers: int
                          ) -> Iterator[EncodedChunk | RecordError]:
    """:func:`encoded_chunks` by ``workers`` spawned processes, started once a second chunk is read (a split of
    one chunk is tokenized here); the chunks are yielded in order, at most ``2 * workers`` of them in flight."""
    pending: collections.deque[tuple[list[Example], Any]] = collections.deque()
    with contextlib.ExitStack() as stack:
        pool: ProcessPoolExecutor | None = None
        for item in items:
            if isinstance(item, RecordError):
                yield item
                continue
            if pool is None and pending:
                pool = stack.enter_context(ProcessPoolExecutor(
                    max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                    initializer=init_tokenizing_process, initargs=(settings, scorer_module(settings[1]))))
                first, _ = pending.popleft()
                pending.append((first, pool.submit(encode_in_process, first)))
            pending.append((item, pool.submit(encode_in_process, item) if pool else None))
            while len(pending) > 2 * workers:
                _, future = pending.popleft()
                yield future.result()
        for chunk, future in pending:
            yield future.result() if future else encode_chunk(chunk, *settings)


def _write_split(
    folder: Path, config: DataConfig, manifest: dict[str, Any], tokenizer: SubwordTokenizer, *,
    shard_examples: int,
) -> None:
    selection = EncodingConfig(**manifest["selection"])
    with_text = manifest["with_text"]
    errors: list[RecordError] = []
    with publishing_directory(folder, remove_stale=True) as temporary:  # under the lock
        writer = _SplitWriter(temporary, shard_examples=shard_examples)
        try:
            for item in encoded_chunks(config, manifest["split"], tokenizer, selection, with_text=with_text,
                                       every_reference=manifest.get("every_reference", False),
                                       workers=config.prepare_workers or os.cpu_count() or 1):
                if isinstance(item, RecordError):
                    if config.on_error is OnError.fail:
                        raise item
                    errors.append(item)
                else:
                    writer.add(item)
        finally:
            shard_sizes = writer.close()
        (temporary / "errors.jsonl").write_text(
            "".join(json.dumps(e.as_record(), ensure_ascii=False) + "\n" for e in errors), encoding="utf-8"
        )
        contents = {"n_examples": sum(shard_sizes), "shards": shard_sizes, "n_errors": len(errors)}
        (temporary / MANIFEST).write_text(json.dumps({**manifest, **contents}, indent=1), encoding="utf-8")


def prepare_split(
    config: DataConfig, split: str, tokenizer: SubwordTokenizer, *, graph: str = "none", copy_oov: bool = False,
    shard_examples: int = SHARD_EXAMPLES,
) -> PreparedSplit:
    """The prepared ``split`` of ``config.path``: reused when its folder exists, else written (by the
    first process to ask; the others wait for it). With ``data.on_error=fail`` a malformed record raises
    its :class:`RecordError` (also when a folder prepared with ``skip`` recorded one); a missing input
    file raises FileNotFoundError. ``graph``, ``copy_oov``: the model's (:func:`split_manifest`)."""
    manifest = split_manifest(config, split, tokenizer, graph=graph, copy_oov=copy_oov)
    folder = split_folder(config, manifest)
    if not (folder / MANIFEST).is_file():
        with _locked(folder):
            if not (folder / MANIFEST).is_file():
                _write_split(folder, config, manifest, tokenizer, shard_examples=shard_examples)
    prepared = PreparedSplit(folder)
    if config.on_error is OnError.fail and prepared.n_errors:
        raise prepared.errors()[0]
    return prepared


# ---------------------------------------------------------------------------------------------- reading


def _mapped(path: Path, dtype: type) -> np.ndarray:
    """The file as a read-only memory map (an empty array for an empty file, which mmap refuses)."""
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r")


class _Shard:
    """The memory maps of one shard folder, opened on first use."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.arrays: dict[str, np.ndarray] = {}
        self.records: BinaryIO | None = None

    def array(self, name: str) -> np.ndarray:
        if name not in self.arrays:
            dtype = TOKEN_DTYPE if name.endswith("_tokens") else OFFSET_DTYPE
            self.arrays[name] = _mapped(self.folder / f"{name}.bin", dtype)
        return self.arrays[name]

    def record(self, index: int) -> dict[str, Any]:
        if self.records is None:
            self.records = open(self.folder / "records.jsonl", "rb")
        start, end = self.array("record_offsets")[index : index + 2].tolist()
        self.records.seek(start)
        return json.loads(self.records.read(end - start))

    def encoded(self, index: int) -> EncodedExample:
        first, last = self.array("example_paragraphs")[index : index + 2].tolist()
        offsets = self.array("paragraph_offsets")[first : last + 1].tolist()
        tokens = self.array("paragraph_tokens")[offsets[0] : offsets[-1]].tolist()
        base = offsets[0]
        paragraphs = [tokens[start - base : end - base] for start, end in zip(offsets, offsets[1:], strict=False)]
        start, end = self.array("target_offsets")[index : index + 2].tolist()
        record = self.record(index)
        return EncodedExample(
            id=record["id"],
            paragraphs=paragraphs,
            target=self.array("target_tokens")[start:end].tolist(),
            references=record["references"],
            provenance=[tuple(pair) for pair in record["provenance"]],
            n_dropped_paragraphs=record["n_dropped_paragraphs"],
            graph=np.asarray(record["graph"], dtype=np.float32) if "graph" in record else None,
            oov_words=record.get("oov_words", []),
            target_truncated=record.get("target_truncated", False),
        )

    def close(self) -> None:
        if self.records is not None:
            self.records.close()
        self.arrays.clear()
        self.records = None


class PreparedSplit(Dataset[EncodedExample]):
    """A prepared split (see the module docstring): a map-style Dataset of :class:`EncodedExample`,
    each read from disk when asked for (the memory maps are opened on first use, in each process).

    ``lengths``: the length index [N, 3] (:data:`hiersum.data.batching.LENGTH_FIELDS`), what the
    token-budget batches are planned from; :meth:`example`: the text of an example of a validation or
    test split; :meth:`errors`: the malformed records left out.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.manifest: dict[str, Any] = json.loads((self.folder / MANIFEST).read_text(encoding="utf-8"))
        self.shard_starts = np.cumsum([0, *self.manifest["shards"]])
        self._shards: list[_Shard] | None = None
        self._lengths: np.ndarray | None = None

    @property
    def split(self) -> str:
        return self.manifest["split"]

    @property
    def n_errors(self) -> int:
        return self.manifest["n_errors"]

    @property
    def lengths(self) -> np.ndarray:
        """int32 [N, 3]: paragraph count, longest paragraph and target length of each example (memory-mapped)."""
        if self._lengths is None:
            flat = _mapped(self.folder / "lengths.bin", TOKEN_DTYPE)
            self._lengths = flat.reshape(-1, len(LENGTH_FIELDS))
        return self._lengths

    def errors(self) -> list[RecordError]:
        """The malformed records that preparing left out (``data.on_error=skip``), in file order."""
        lines = (self.folder / "errors.jsonl").read_text(encoding="utf-8").splitlines()
        return [RecordError.from_record(json.loads(line)) for line in lines if line]

    def __len__(self) -> int:
        return int(self.manifest["n_examples"])

    def _locate(self, index: int) -> tuple[_Shard, int]:
        if not -len(self) <= index < len(self):
            raise IndexError(f"example {index} of a split of {len(self)}")
        index %= len(self)
        if self._shards is None:
            self._shards = [_Shard(self.folder / f"shard-{k:05d}") for k in range(len(self.manifest["shards"]))]
        shard = int(np.searchsorted(self.shard_starts, index, side="right")) - 1
        return self._shards[shard], index - int(self.shard_starts[shard])

    @overload
    def __getitem__(self, index: int) -> EncodedExample: ...
    @overload
    def __getitem__(self, index: slice) -> list[EncodedExample]: ...

    def __getitem__(self, index: int | slice) -> EncodedExample | list[EncodedExample]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        shard, local = self._locate(index)
        return shard.encoded(local)

    def __iter__(self) -> Iterator[EncodedExample]:
        return (self[i] for i in range(len(self)))

    def example(self, index: int) -> Example:
        """The text of example ``index`` (validation and test splits keep it; train does not)."""
        if not self.manifest["with_text"]:
            raise ValueError(f"{self.folder}: the {self.split} split keeps token ids only, not the text")
        shard, local = self._locate(index)
        record = shard.record(local)
        return Example(id=record["id"], title=record["title"], documents=record["documents"],
                       references=record["references"])

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (a DataLoader worker): the folder, not its open memory maps."""
        return {**self.__dict__, "_shards": None, "_lengths": None}

    def close(self) -> None:
        for shard in self._shards or []:
            shard.close()
        self._shards, self._lengths = None, None
