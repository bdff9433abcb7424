"""The registry of data formats: one entry per ``data.format`` value.

A new format is one :func:`register_format` call plus one ``conf/data/<name>.yaml`` (``format: <name>``).
An entry (:class:`FormatSpec`) declares everything the rest of the code asks about a format:

- how to read a split: ``parse_line`` (one line of a split file -> :class:`Example`; the split reader
  is then every non-blank line of ``<data.path>/<split file><suffix>``) or its own ``read_split`` (of the one
  split file, or, with ``split_inputs``, of each file of the split: AESLC holds one email a file), or
  ``read_files`` (of all the files of a split together: the line-pair layout's source and target); or,
  for a format that holds token ids instead of text (``wikisum``), ``read_encoded``, which reads and
  encodes a split record by record with the tokenizer the ids come from, and ``split_inputs``, the
  files of a split (what a prepared corpus fingerprints, :mod:`hiersum.data.prepared`). Such a format cannot train a
  tokenizer nor be scored from predictions (no reference text on the command line);
- its split file names (``split_files``: SciTLDR ships ``train/dev/test``, so its validation split
  is ``dev.jsonl``) and their ``suffix``;
- whether ``hiersum summarize`` can read it (every format with ``parse_line``, under its name and
  its ``input_aliases``; see :mod:`hiersum.data.formats.inputs`, which adds the ``auto`` and ``text`` inputs);
- the data config fields its readers take (``options``: the line-pair layout's separators, which a preset sets):
  :func:`data_format` binds a config's values, and a prepared split's key holds them (:func:`format_options`).

Built in: ``jsonl`` (native JSONL, :mod:`hiersum.data.formats.native`), ``multinews``
(:mod:`hiersum.data.formats.multinews`), ``scitldr`` (:mod:`hiersum.data.formats.scitldr`), ``cnndm``
(:mod:`hiersum.data.formats.cnndm`), ``aeslc`` (:mod:`hiersum.data.formats.aeslc`), ``line_pairs``
(:mod:`hiersum.data.formats.line_pairs`) and ``wikisum``
(:mod:`hiersum.data.formats.wikisum`). ``DataConfig.format`` stays a string: :func:`format_spec` is the
one lookup, and it refuses an unknown name in one line that lists the registered ones.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hiersum.config.choices import TextNormalization
from hiersum.config.data import LINE_LAYOUT_FIELDS
from hiersum.data.formats.aeslc import SPLIT_NAMES as AESLC_SPLIT_NAMES
from hiersum.data.formats.aeslc import read_subject_file, subject_files
from hiersum.data.formats.arrow import Column, corpus_layout, iter_table_records, split_files
from hiersum.data.formats.cnndm import parse_cnndm_object, parse_cnndm_record
from hiersum.data.formats.line_pairs import SPLIT_NAMES as LINE_PAIR_SPLIT_NAMES
from hiersum.data.formats.line_pairs import pair_files, parse_source_line, read_line_pairs
from hiersum.data.formats.lines import ObjectParser, ParsedRecord, RecordParser, iter_line_records
from hiersum.data.formats.multinews import parse_multinews_object, parse_multinews_record
from hiersum.data.formats.native import iter_jsonl, parse_native_object, parse_record
from hiersum.data.formats.scitldr import iter_scitldr, parse_scitldr_object, parse_scitldr_record
from hiersum.data.formats.wikisum import COLUMNS as WIKISUM_COLUMNS
from hiersum.data.formats.wikisum import SPLIT_NAMES as WIKISUM_SPLIT_NAMES
from hiersum.data.formats.wikisum import iter_wikisum, shard_paths
from hiersum.data.schema import DATA_DOCS, EncodedExample, Example, RecordError
from hiersum.registry import Registry

SplitReader = Callable[[Path], Iterable[ParsedRecord]]
"""``read(path) -> records`` of one split file, references required."""
EncodedReader = Callable[..., Iterable[tuple[Example, EncodedExample] | RecordError]]
"""``read(data_path, split, tokenizer, selection, *, with_text) -> (example, encoded) pairs or errors``,
one record at a time, as :func:`hiersum.data.formats.wikisum.iter_wikisum`."""

SPLIT_FILES = MappingProxyType({"train": "train", "validation": "validation", "test": "test"})
"""The default file stem of each hiersum split."""


@dataclass(frozen=True)
class FormatSpec:
    """What a data format is (see the module docstring). Give ``parse_line`` and/or ``read_split``
    (a text format), or ``read_encoded`` (a format of token ids)."""

    description: str
    """One line for listings and error messages."""
    parse_line: RecordParser | None = None
    """``parse(text, *, path, line, require_summary) -> Example`` of one non-blank line, raising
    :class:`RecordError`. Makes the format a ``hiersum summarize`` input format too."""
    read_split: SplitReader | None = None
    """The records of one split file (default: :func:`iter_line_records` with ``parse_line``)."""
    read_files: Callable[..., Iterable[ParsedRecord]] | None = None
    """The records of a split from all of its files (``split_inputs``) together, instead of each with ``read_split``:
    the line-pair layout's source and target, read side by side."""
    read_encoded: EncodedReader | None = None
    """A format of token ids: reads and encodes a split of ``data.path`` (e.g. WikiSum shards)."""
    split_inputs: Callable[[Path, str], list[Path]] | None = None
    """The files of a split of ``data.path`` (default: the one file :meth:`split_path`); a text format reads
    each of them with ``read_split``, in order."""
    split_files: Mapping[str, str] = field(default_factory=lambda: SPLIT_FILES)
    """hiersum split (train / validation / test) -> file stem; another split name is a stem itself."""
    suffix: str = ".jsonl"
    """Suffix of a split file."""
    input_aliases: tuple[str, ...] = ()
    """Other names of the format as a ``hiersum summarize`` ``input_format`` (``native`` for ``jsonl``)."""
    columns: tuple[Column, ...] = ()
    """The columns of a row of a ``datasets`` corpus (``save_to_disk`` folder or parquet files,
    :mod:`hiersum.data.formats.arrow`) the format reads; none: the format reads no such corpus."""
    parse_object: ObjectParser | None = None
    """``parse(record, *, path, line, require_summary) -> Example`` of one such row (a dict of ``columns``);
    the same fields as a JSON line's object."""
    released_normalization: TextNormalization = TextNormalization.none
    """How the corpus's own text is released (CNN/DailyMail: PTB-tokenized): under that ``data.text_normalization``
    its splits and tokenizer text are read as released, not normalized again
    (:func:`hiersum.data.formats.registry.corpus_normalization`); raw text given to a checkpoint still is."""
    options: tuple[str, ...] = ()
    """The data config fields (``data.<name>``) the readers (``parse_line``, ``read_split``, ``read_files``) take as
    keywords: how the format's text is laid out, which a preset sets (the line-pair layout's separators,
    :data:`~hiersum.config.data.LINE_LAYOUT_FIELDS`). :meth:`with_options` binds their values."""

    def __post_init__(self) -> None:
        text = any(reader is not None for reader in (self.parse_line, self.read_split, self.read_files))
        if text == (self.read_encoded is not None):
            raise ValueError("a format gives parse_line, read_split and/or read_files (text) or read_encoded "
                             "(token ids)")
        if self.read_files is not None and self.split_inputs is None:
            raise ValueError("a format that gives read_files gives split_inputs: the files it reads together")

    def with_options(self, values: Mapping[str, Any]) -> FormatSpec:
        """This format with its readers taking ``values`` (of its ``options``; the others are ignored) as keywords;
        itself when it takes none."""
        if not self.options:
            return self
        bound = {name: values.get(name) for name in self.options}

        def bind(reader: Callable[..., Any] | None) -> Callable[..., Any] | None:
            return None if reader is None else functools.partial(reader, **bound)

        return replace(self, parse_line=bind(self.parse_line), read_split=bind(self.read_split),
                       read_files=bind(self.read_files), options=())

    @property
    def token_ids(self) -> bool:
        """True for a format of token ids, not text (needs the ids' tokenizer: ``tokenizer=official_spm``)."""
        return self.read_encoded is not None

    def split_file(self, split: str) -> str:
        """The file name of ``split``: ``validation`` -> ``dev.jsonl`` for SciTLDR."""
        return self.split_files.get(split, split) + self.suffix

    def split_path(self, data_dir: str | Path, split: str) -> Path:
        """``<data_dir>/<split file>``, with a clear error when it is missing."""
        path = Path(data_dir) / self.split_file(split)
        if not path.is_file():
            raise FileNotFoundError(f"data split '{split}' not found: expected the file {path} (see {DATA_DOCS})")
        return path

    def reads_table(self, data_dir: str | Path) -> bool:
        """True when ``data_dir`` is a ``datasets`` corpus (``save_to_disk`` or parquet) of this format."""
        return bool(self.columns) and corpus_layout(data_dir) is not None

    def input_files(self, data_dir: str | Path, split: str) -> list[Path]:
        """Every file ``split`` of ``data_dir`` is read from (a missing one raises FileNotFoundError)."""
        if self.reads_table(data_dir):
            return split_files(data_dir, (split, self.split_files.get(split, split)))
        if self.split_inputs is not None:
            return self.split_inputs(Path(data_dir), split)
        return [self.split_path(data_dir, split)]

    def split_location(self, data_dir: str | Path, split: str) -> str:
        """Where ``split`` of ``data_dir`` is read from, for messages: its file, or its files joined by ``, ``."""
        return ", ".join(str(path) for path in self.input_files(data_dir, split))

    def split_records(self, data_dir: str | Path, split: str) -> Iterator[ParsedRecord]:
        """Every record of ``split`` of the corpus folder ``data_dir`` (references required): the rows of a
        ``datasets`` corpus, or the records of its split file (a missing split raises FileNotFoundError)."""
        if self.reads_table(data_dir) and self.parse_object is not None:
            return iter_table_records(self.input_files(data_dir, split), self.parse_object, self.columns,
                                      require_summary=True)
        if self.read_files is not None:  # files read together (a line pair: the source and its target)
            assert self.split_inputs is not None
            return iter(self.read_files(self.split_inputs(Path(data_dir), split)))
        if self.split_inputs is not None:  # a split of several files (AESLC: one email a file)
            return itertools.chain.from_iterable(map(self.iter_split, self.split_inputs(Path(data_dir), split)))
        return self.iter_split(self.split_path(data_dir, split))

    def iter_split(self, path: str | Path) -> Iterator[ParsedRecord]:
        """Every record of the split file ``path`` (references required)."""
        if self.read_files is not None:
            raise ValueError(f"{self.description}: a split is read from its files together "
                             "(split_records(data_dir, split)), not one file")
        if self.read_split is not None:
            return iter(self.read_split(Path(path)))
        if self.parse_line is not None:
            return iter_line_records(path, self.parse_line, require_summary=True)
        raise ValueError(f"{self.description}: token ids, not text; it is read with its tokenizer")


def _not_an_input_mode(name: str) -> None:
    if name in ("auto", "text"):
        raise ValueError(f"{name!r} is a hiersum summarize input mode, not a format name")


FORMATS: Registry[FormatSpec] = Registry("data.format", "format", check_name=_not_an_input_mode, docs=DATA_DOCS)
"""Every registered data format, by name (the value of ``data.format``)."""
register_format = FORMATS.register
unregister_format = FORMATS.unregister


def format_spec(name: str, *, field_name: str = "data.format") -> FormatSpec:
    """The entry of format ``name`` (one-line ``ValueError`` naming the registered ones if unknown)."""
    return FORMATS.lookup(name, field=field_name)


def corpus_normalization(config: Any) -> TextNormalization:
    """The normalization of the text of ``config``'s corpus (a :class:`~hiersum.config.DataConfig`) as prepare reads
    it: ``data.text_normalization``, but none where the format releases its text so normalized already
    (:attr:`FormatSpec.released_normalization`; re-tokenizing CNN/DailyMail's release would take ~50 ms an article
    to change 0.17% of its tokens, docs/data.md)."""
    normalization = TextNormalization.coerce(config.text_normalization, "data.text_normalization")
    released = format_spec(str(config.format)).released_normalization
    return TextNormalization.none if normalization is released else normalization


def format_options(config: Any) -> dict[str, Any]:
    """The values of the fields of ``config`` (a :class:`~hiersum.config.DataConfig`) its format's readers take
    (``FormatSpec.options``), as plain values: empty for a format that takes none. Part of what a prepared split,
    a corpus tokenizer and the ranker's labels are keyed by."""
    spec = format_spec(str(config.format))
    return {name: _plain(getattr(config, name)) for name in spec.options}


def _plain(value: Any) -> Any:
    """A list of a sequence (an OmegaConf ``ListConfig`` too), else ``value``."""
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) else value


def data_format(config: Any) -> FormatSpec:
    """The format of ``config`` (a :class:`~hiersum.config.DataConfig`), its readers taking the config's values of
    its ``options`` (:meth:`FormatSpec.with_options`): how a split of ``config.path`` is read."""
    return format_spec(str(config.format)).with_options(format_options(config))


def validate_format(config: Any) -> None:
    """Check ``config.format`` (a :class:`~hiersum.config.DataConfig` or its DictConfig) against the registry."""
    format_spec(str(config.format))


def text_format(name: str) -> FormatSpec:
    """The entry of a text format (read from split files); a token-id format raises ValueError."""
    spec = format_spec(name)
    if spec.token_ids:
        text = sorted(n for n, s in FORMATS.items() if not s.token_ids)
        raise ValueError(f"data.format={name!r} is not a text format: expected one of {', '.join(text)}")
    return spec


def line_formats() -> dict[str, str]:
    """``hiersum summarize`` input format name (or alias) -> registered format, for every line format."""
    names: dict[str, str] = {}
    for name, spec in FORMATS.items():
        if spec.parse_line is not None:
            names.update({alias: name for alias in spec.input_aliases})
            names[name] = name
    return names


_ID = ("string", "integer")
register_format("jsonl", FormatSpec(
    "native JSONL text ({id, title, documents, summary} a line)", parse_line=parse_record,
    read_split=iter_jsonl, input_aliases=("native",), parse_object=parse_native_object,
    columns=(Column("id", _ID), Column("title", ("string",)),
             Column("documents", ("list<string>", "list<list<string>>"), required=True),
             Column("summary", ("string", "list<string>"), reference=True)),
))
register_format("multinews", FormatSpec(
    "Multi-News JSONL ({document: articles joined by ' ||||| ', summary} a line)",
    parse_line=parse_multinews_record, parse_object=parse_multinews_object,
    columns=(Column("id", _ID), Column("document", ("string",), required=True),
             Column("summary", ("string",), reference=True)),
))
register_format("scitldr", FormatSpec(
    "SciTLDR JSONL ({paper_id, source: sentences, target: TLDRs} a line; splits train/dev/test)",
    parse_line=parse_scitldr_record, read_split=iter_scitldr, split_files={**SPLIT_FILES, "validation": "dev"},
    parse_object=parse_scitldr_object,
    columns=(Column("paper_id", _ID), Column("title", ("string",)), Column("source", ("list<string>",), required=True),
             Column("target", ("list<string>",), reference=True)),
))
register_format("cnndm", FormatSpec(
    "CNN/DailyMail ({id, article, highlights: one sentence a line}; parquet, save_to_disk or JSONL)",
    parse_line=parse_cnndm_record, parse_object=parse_cnndm_object,
    columns=(Column("id", _ID), Column("article", ("string",), required=True),
             Column("highlights", ("string",), reference=True)),
    released_normalization=TextNormalization.ptb,
))
register_format("aeslc", FormatSpec(
    "the AESLC release (enron_subject_line/{train,dev,test}/*.subject: an email, @subject, @ann0-2)",
    read_split=read_subject_file, split_inputs=subject_files, split_files=AESLC_SPLIT_NAMES, suffix="",
))
register_format("line_pairs", FormatSpec(
    "line pairs ({split}.source and {split}.target, one example a line; the documents of a line split at "
    "data.document_separator)",
    parse_line=parse_source_line, read_files=read_line_pairs, split_inputs=pair_files,
    split_files=LINE_PAIR_SPLIT_NAMES, suffix=".source", options=LINE_LAYOUT_FIELDS,
))
register_format("wikisum", FormatSpec(
    "the ranked WikiSum release (shards WIKI.{train,valid,test}.N.pt of SentencePiece ids)",
    read_encoded=iter_wikisum, split_inputs=shard_paths, split_files=WIKISUM_SPLIT_NAMES, columns=WIKISUM_COLUMNS,
))
