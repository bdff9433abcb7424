"""Corpora in the Hugging Face ``datasets`` layouts, read with pyarrow: a split is a set of Arrow or parquet
files whose rows are the records a JSON line of the format would hold.

Two layouts of ``data.path``:

``save_to_disk``
    What ``datasets.DatasetDict.save_to_disk(DIR)`` writes: ``DIR/dataset_dict.json`` (``{"splits": [...]}``)
    and a folder per split holding ``data-00000-of-0000N.arrow`` (Arrow *stream* format), ``dataset_info.json``
    and ``state.json`` (whose ``_data_files`` lists the split's Arrow files in order).
``parquet``
    A folder of per-split parquet files, as the Hugging Face Hub serves them: ``train.parquet`` or
    ``train-00000-of-00002.parquet`` (and ``validation``, ``test``), in the folder or in its ``data/``.

A split named ``validation`` is also found under the format's own split name (SciTLDR ``dev``, WikiSum
``valid``). Rows are read one record batch at a time, only the columns the format knows: Arrow files in
sequence (:class:`pyarrow.OSFile`, :func:`pyarrow.ipc.open_stream`), parquet files through
:meth:`pyarrow.parquet.ParquetFile.iter_batches` with buffered column reads, so a corpus larger than memory is
never loaded whole and the resident memory stays flat as the corpus grows (``scripts/bench_data.py
--datasets``; a memory map, :func:`pyarrow.memory_map`, would hold as little on the heap, but the pages it
touches count in the process's resident memory: 290 MB more for a 290 MB split). Before any row, each file's
schema is checked against the format's :class:`Column` list: a missing or mistyped column is one
:class:`ColumnError` line naming the file, the column, its expected type and the columns found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq

from hiersum.data.formats.lines import ObjectParser, Record
from hiersum.data.schema import DATA_DOCS, RecordError
from hiersum.errors import UsageError

DATASET_DICT = "dataset_dict.json"
"""The file that makes a folder a ``save_to_disk`` corpus."""
SPLIT_STATE = "state.json"
"""The file of a ``save_to_disk`` split folder listing its Arrow files (``_data_files``)."""
ROWS_PER_BATCH = 256
"""Rows converted to Python objects at a time (a parquet record batch; a slice of an Arrow file's batch)."""
PARQUET_BUFFER = 1 << 20
"""Bytes of a parquet column chunk read at a time (unbuffered, pyarrow reads a row group's chunk whole)."""
ARROW_SUFFIXES = (".arrow", ".parquet")
"""Suffixes of the files read as one split (``hiersum summarize input=FILE``)."""


class ColumnError(UsageError):
    """A corpus file without a column its format reads, or with one of another type, or that is no Arrow or
    parquet file: one line, exit status 2 (a :class:`~hiersum.errors.UsageError`)."""


def _is_string(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)


def _list_of(check: Callable[[pa.DataType], bool]) -> Callable[[pa.DataType], bool]:
    def is_list(kind: pa.DataType) -> bool:
        lists = pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
        return lists and check(kind.value_type)
    return is_list


_TYPES: dict[str, Callable[[pa.DataType], bool]] = {
    "string": _is_string,
    "integer": pa.types.is_integer,
    "list<string>": _list_of(_is_string),
    "list<list<string>>": _list_of(_list_of(_is_string)),
    "list<integer>": _list_of(pa.types.is_integer),
    "list<list<integer>>": _list_of(_list_of(pa.types.is_integer)),
}
"""The column types a format may name, each with the test of an Arrow type."""


@dataclass(frozen=True)
class Column:
    """A column a format reads: its ``name``, the Arrow types it may have (names of :data:`_TYPES`), and whether
    a split needs it (``required``; ``reference``: needed where references are, i.e. in a training split)."""

    name: str
    types: tuple[str, ...]
    required: bool = False
    reference: bool = False

    def __post_init__(self) -> None:
        unknown = [kind for kind in self.types if kind not in _TYPES]
        if unknown:
            raise ValueError(f"column {self.name}: unknown types {unknown}; expected names among {sorted(_TYPES)}")

    def accepts(self, kind: pa.DataType) -> bool:
        return any(_TYPES[name](kind) for name in self.types)


def _type_name(kind: pa.DataType) -> str:
    """``list<string>`` for a list of strings however the file names its item field (parquet: ``element``)."""
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return f"list<{_type_name(kind.value_type)}>"
    return "string" if _is_string(kind) else str(kind)


def _describe(schema: pa.Schema) -> str:
    return ", ".join(f"{field.name}: {_type_name(field.type)}" for field in schema) or "none"


def check_schema(path: Path, schema: pa.Schema, columns: Iterable[Column], *, require_references: bool) -> list[str]:
    """The names of ``columns`` that ``schema`` (of the file ``path``) holds; a required column it lacks, or a
    column of another type, raises :class:`ColumnError`."""
    present = []
    for column in columns:
        index = schema.get_field_index(column.name)
        expected = " or ".join(column.types)
        if index < 0:
            if column.required or (column.reference and require_references):
                raise ColumnError(f"{path}: expected a column '{column.name}' ({expected}), found only the columns "
                                  f"{_describe(schema)} (see {DATA_DOCS})")
            continue
        found = schema.field(index).type
        if not column.accepts(found):
            raise ColumnError(f"{path}: expected the column '{column.name}' to be {expected}, found "
                              f"{_type_name(found)} (columns: {_describe(schema)}; see {DATA_DOCS})")
        present.append(column.name)
    return present


def corpus_layout(path: str | Path) -> str | None:
    """``save_to_disk`` or ``parquet`` when the folder ``path`` holds a corpus in that layout, else None."""
    path = Path(path)
    if (path / DATASET_DICT).is_file():
        return "save_to_disk"
    if path.is_dir() and any(next(folder.glob("*.parquet"), None) for folder in (path, path / "data")):
        return "parquet"
    return None


def _listed_splits(directory: Path) -> list[str]:
    try:
        splits = json.loads((directory / DATASET_DICT).read_text(encoding="utf-8"))["splits"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ColumnError(f"{directory / DATASET_DICT}: expected a JSON object with 'splits', the file written by "
                          f"datasets' save_to_disk; cannot read it ({error})") from None
    return [str(split) for split in splits]


def _saved_split_files(folder: Path) -> list[Path]:
    """The Arrow files of a ``save_to_disk`` split folder, in the order of its ``state.json`` (else by name)."""
    try:
        state = json.loads((folder / SPLIT_STATE).read_text(encoding="utf-8"))
        files = [folder / entry["filename"] for entry in state["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError):
        files = sorted(folder.glob("*.arrow"))
    if not files or not all(file.is_file() for file in files):
        raise ColumnError(f"{folder}: expected the Arrow files of a datasets split (data-00000-of-0000N.arrow, "
                          f"listed in {SPLIT_STATE}), found {[p.name for p in sorted(folder.iterdir())]}")
    return files


def _parquet_files(directory: Path, name: str) -> list[Path]:
    pattern = re.compile(rf"^{re.escape(name)}(-\d+-of-\d+)?\.parquet$")
    for folder in (directory, directory / "data"):
        files = sorted(path for path in folder.glob("*.parquet") if pattern.match(path.name))
        if files:
            return files
    return []


def split_files(directory: str | Path, names: Iterable[str]) -> list[Path]:
    """The files of a split of the corpus folder ``directory``, found under the first of ``names`` (the hiersum
    split name, then the format's own) that the corpus holds; none of them: FileNotFoundError (one line)."""
    directory, names = Path(directory), list(dict.fromkeys(names))
    if corpus_layout(directory) == "save_to_disk":
        listed = _listed_splits(directory)
        for name in names:
            if name in listed:
                return _saved_split_files(directory / name)
        raise FileNotFoundError(f"{directory}: expected a split '{names[0]}' in this datasets save_to_disk folder, "
                                f"found only the splits {', '.join(listed) or 'none'} (see {DATA_DOCS})")
    for name in names:
        files = _parquet_files(directory, name)
        if files:
            return files
    found = sorted({path.name for folder in (directory, directory / "data") for path in folder.glob("*.parquet")})
    raise FileNotFoundError(f"{directory}: expected the parquet files of a split '{names[0]}' ({names[0]}.parquet or "
                            f"{names[0]}-00000-of-0000N.parquet, here or in data/), found {', '.join(found)} "
                            f"(see {DATA_DOCS})")


def file_schema(path: Path) -> pa.Schema:
    """The schema of a parquet or Arrow stream file (its metadata alone is read)."""
    try:
        if path.suffix == ".parquet":
            return pq.read_schema(path)
        with pa.OSFile(str(path)) as source:
            return pa.ipc.open_stream(source).schema
    except (pa.ArrowException, OSError) as error:
        raise _unreadable(path, error) from None


def _kind(path: Path) -> str:
    return "a parquet file" if path.suffix == ".parquet" else "an Arrow stream file (as datasets writes)"


def _unreadable(path: Path, error: Exception) -> ColumnError:
    return ColumnError(f"{path}: expected {_kind(path)}, cannot read it ({str(error).splitlines()[0]})")


def table_input_files(path: Path) -> list[Path] | None:
    """The files of a one-split input of ``hiersum summarize``: a ``.parquet`` or ``.arrow`` file, or the folder
    of one split of a ``save_to_disk`` corpus; None for another input. The folder of a whole ``save_to_disk``
    corpus raises FileNotFoundError naming its split folders (one of them is the input)."""
    if path.is_file():
        return [path] if path.suffix in ARROW_SUFFIXES else None
    if (path / DATASET_DICT).is_file():
        splits = ", ".join(str(path / split) for split in _listed_splits(path))
        raise FileNotFoundError(f"{path}: a datasets save_to_disk folder of several splits; expected the folder of "
                                f"one split as the input, e.g. one of {splits}")
    if (path / SPLIT_STATE).is_file():
        return _saved_split_files(path)
    return None


def _batches(path: Path, columns: list[Column], require_references: bool) -> Iterator[pa.RecordBatch]:
    if path.suffix == ".parquet":
        try:
            # buffered reads of a column chunk: datasets writes row groups of thousands of rows (tens of MB)
            parquet = pq.ParquetFile(path, buffer_size=PARQUET_BUFFER, pre_buffer=False)
        except (pa.ArrowException, OSError) as error:
            raise _unreadable(path, error) from None
        names = check_schema(path, parquet.schema_arrow, columns, require_references=require_references)
        yield from parquet.iter_batches(batch_size=ROWS_PER_BATCH, columns=names)
        return
    with pa.OSFile(str(path)) as source:  # read in sequence: a memory map's pages would count in the RSS
        try:
            reader = pa.ipc.open_stream(source)
        except (pa.ArrowException, OSError) as error:
            raise _unreadable(path, error) from None
        names = check_schema(path, reader.schema, columns, require_references=require_references)
        for batch in reader:  # as datasets wrote it (1,000 rows): converted to Python objects 256 rows at a time
            batch = batch.select(names)
            yield from (batch.slice(start, ROWS_PER_BATCH) for start in range(0, batch.num_rows, ROWS_PER_BATCH))


def iter_rows(files: Iterable[Path], columns: Iterable[Column], *,
              require_references: bool) -> Iterator[tuple[Path, int, dict[str, Any]]]:
    """``(file, row number from 1, {column: value})`` of every row of ``files`` in order, with the ``columns`` of
    the format that each file holds; a file's schema is checked (:func:`check_schema`) before its first row."""
    columns = list(columns)
    for path in map(Path, files):
        row = 0
        try:
            for batch in _batches(path, columns, require_references):
                for record in batch.to_pylist():
                    row += 1
                    yield path, row, record
        except (pa.ArrowException, OSError) as error:  # a file cut short or damaged after its schema
            raise ColumnError(f"{path}: expected {row + 1} or more rows of {_kind(path)}, cannot read them "
                              f"({str(error).splitlines()[0]})") from None


def iter_table_records(files: Iterable[Path], parse: ObjectParser, columns: Iterable[Column], *,
                       require_summary: bool) -> Iterator[Record]:
    """``parse`` of every row of ``files`` (a split, :func:`iter_rows`), or the :class:`RecordError` of the row
    (its "line" is the row number in its file). A row whose id appeared on an earlier row of the split is refused
    (field ``id``); the first one is kept."""
    first: dict[str, str] = {}  # where each id was first seen
    for path, row, record in iter_rows(files, columns, require_references=require_summary):
        try:
            example = parse(record, path=str(path), line=row, require_summary=require_summary)
        except RecordError as error:
            yield error
            continue
        if example.id in first:
            yield RecordError(str(path), row, "id", f"expected a unique id, found {example.id!r} again (first at "
                              f"{first[example.id]}; only that record is kept)", record_id=example.id)
            continue
        first[example.id] = f"{path.name} row {row}"
        yield example
