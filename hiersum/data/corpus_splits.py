"""The train / validation / test splits of a corpus folder: read as text, or prepared on disk once
(:mod:`hiersum.data.prepared`) and read lazily, without Lightning.

A split file is ``<data.path>/<split file>`` of the format (:mod:`hiersum.data.formats.registry`):
``<split>.jsonl``, except SciTLDR's validation split ``dev.jsonl``; WikiSum's splits are shards, AESLC's folders of
files, a line pair's two files (``val.source`` and ``val.target``, read with the data config's layout:
:func:`hiersum.data.formats.registry.data_format`). ``data.path``
may also be a ``datasets`` corpus of any format: a ``save_to_disk`` folder or per-split parquet files
(:mod:`hiersum.data.formats.arrow`).
Training reaches the prepared splits through :class:`hiersum.data.datamodule.SummarizationDataModule`;
evaluation and scripts use :class:`CorpusSplits` directly, so scoring a split never imports Lightning.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hiersum.config import DataConfig, ModelConfig, OnError
from hiersum.data.formats.registry import corpus_normalization, data_format, format_spec, text_format
from hiersum.data.jsonl_output import write_jsonl_atomically
from hiersum.data.paragraphs import paragraphed
from hiersum.data.prepared import PreparedSplit, prepare_split
from hiersum.data.schema import DATA_DOCS, EncodedExample, Example, RecordError
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.errors import UsageError

DATA_ERRORS = "data_errors.jsonl"
"""The file of a run directory listing the records ``data.on_error=skip`` left out."""


def read_split(path: str | Path, data_format: str = "jsonl") -> list[Example]:
    """The examples of the split file ``path`` in the text format ``data_format`` (references required);
    the first malformed record raises its :class:`RecordError`."""
    examples = []
    for item in text_format(data_format).iter_split(path):
        if isinstance(item, RecordError):
            raise item
        examples.append(item)
    return examples


def read_corpus_split(data_dir: str | Path, split: str, data_format: str = "jsonl") -> list[Example]:
    """The examples of ``split`` (train / validation / test, or a file stem such as ``dev``) of the
    corpus folder ``data_dir`` in ``data_format`` (its split files, or a ``datasets`` corpus); a missing split
    raises FileNotFoundError, the first malformed record its :class:`RecordError`."""
    examples = []
    for item in text_format(data_format).split_records(data_dir, split):
        if isinstance(item, RecordError):
            raise item
        examples.append(item)
    return examples


def existing_split_files(config: DataConfig, splits: list[str]) -> dict[str, list[Path]]:
    """``{"data split NAME": [files]}``: the files each of ``splits`` is read from, for the splits whose
    files exist (a missing split is reported where it is read). An unknown format is a :class:`UsageError`."""
    spec = format_spec(config.format)
    found = {}
    for split in splits:
        try:
            found[f"data split {split}"] = spec.input_files(config.path, split)
        except FileNotFoundError:
            continue
    return found


def write_data_errors(run_dir: str | Path, errors: dict[str, list[RecordError]]) -> Path | None:
    """``<run_dir>/data_errors.jsonl``: the records left out of each split (one ``{"split", "file", "line",
    "id", "field", "reason"}`` a line), or None (and no file) when none was."""
    records = [{"split": split, **error.as_record()} for split, found in errors.items() for error in found]
    path = Path(run_dir) / DATA_ERRORS
    if not records:
        path.unlink(missing_ok=True)
        return None
    write_jsonl_atomically(path, records)
    return path


def _none_because(prepared: PreparedSplit) -> str:
    if prepared.n_errors:
        return f"all {prepared.n_errors} records were malformed and skipped (data.on_error=skip; see {DATA_ERRORS})"
    return "the split holds no record"


def read_text_split(config: DataConfig, split: str) -> tuple[list[Example], list[RecordError]]:
    """The examples of a text split, without tokenizing them (scoring given predictions), and the
    malformed records left out (``data.on_error=skip``; with ``fail`` the first one raises)."""
    spec = data_format(config)
    examples: list[Example] = []
    errors: list[RecordError] = []
    try:
        for item in spec.split_records(config.path, split):
            if isinstance(item, RecordError):
                if config.on_error is OnError.fail:
                    raise item
                errors.append(item)
            else:
                examples.append(item)
    except FileNotFoundError as error:
        raise UsageError(str(error)) from None
    if not examples:
        reason = f"all {len(errors)} records were malformed and skipped" if errors else "the split holds no record"
        raise UsageError(f"{spec.split_location(config.path, split)}: expected {split} examples, found none ({reason}; "
                         f"see {DATA_DOCS})")
    return examples, errors


def corpus_selection(config: DataConfig) -> DataConfig:
    """``config`` with the text normalization prepare applies to its corpus
    (:func:`hiersum.data.formats.registry.corpus_normalization`: none where the release is so normalized)."""
    return replace(config, text_normalization=corpus_normalization(config))


def paragraphed_split(config: DataConfig, split: str, tokenizer: SubwordTokenizer | None) -> list[Example]:
    """The examples of a text split (:func:`read_text_split`, its malformed records left out or raised) as encoding
    reads them: normalized as prepare normalizes the corpus and their paragraphs made by the paragraph rule
    (:func:`hiersum.data.paragraphs.paragraphed`, ``tokenizer`` counting the tokens of ``sentences``; None
    only under ``given``). What the
    ranker's labels and training examples and selection evaluation read, so that they rank the paragraphs encoding
    ranks."""
    examples, _ = read_text_split(config, split)
    return paragraphed(examples, tokenizer, corpus_selection(config))


class CorpusSplits:
    """The train / validation / test splits of ``config.path`` in ``config.format``, encoded with
    ``tokenizer`` for ``model`` (whether examples carry a paragraph graph: ``model.graph``).

    ``load(split)`` prepares a split on disk the first time any run asks for it (then reuses the
    prepared folder) and returns it as a lazy :class:`~hiersum.data.prepared.PreparedSplit`. A missing
    split file, or a split without any example, is a :class:`UsageError`; a malformed record a
    :class:`~hiersum.data.schema.RecordError` unless ``data.on_error=skip`` (:meth:`write_errors` lists the
    records left out).
    """

    def __init__(self, config: DataConfig, tokenizer: SubwordTokenizer, model: ModelConfig | None = None) -> None:
        self.config = config
        self.format = format_spec(config.format)
        self.tokenizer = tokenizer
        self.model = model or ModelConfig()
        self.prepared: dict[str, PreparedSplit] = {}

    def load(self, split: str) -> PreparedSplit:
        """The prepared ``split`` (prepared, or found prepared, on the first call). A split without any
        example (an empty file, or every record skipped) is a :class:`UsageError` naming its file."""
        if split not in self.prepared:
            try:
                prepared = prepare_split(self.config, split, self.tokenizer, graph=self.model.graph,
                                         copy_oov=self.model.copy_oov)
            except FileNotFoundError as error:
                raise UsageError(str(error)) from None
            if len(prepared) == 0:
                files = self.format.split_location(self.config.path, split)
                raise UsageError(f"{files}: expected {split} examples, found none ({_none_because(prepared)}; "
                                 f"see {DATA_DOCS})")
            self.prepared[split] = prepared
        return self.prepared[split]

    def prepare(self, splits: list[str]) -> None:
        """Prepare (or find prepared) each of ``splits`` now: a missing file or a malformed record is
        reported before training starts."""
        for split in splits:
            self.load(split)

    def write_errors(self, run_dir: str | Path) -> Path | None:
        """``<run_dir>/data_errors.jsonl``: the records left out of the splits loaded so far
        (:func:`write_data_errors`)."""
        return write_data_errors(run_dir, {split: prepared.errors() for split, prepared in self.prepared.items()})

    def evaluation_split(self, split: str) -> tuple[list[Example], list[EncodedExample]]:
        """The examples of ``split`` and their encodings, the first ``data.limit_eval_examples`` when set."""
        prepared = self.load(split)
        n = min(self.config.limit_eval_examples or len(prepared), len(prepared))
        return [prepared.example(i) for i in range(n)], prepared[:n]
