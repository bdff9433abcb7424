"""The line-pair layout (``data.format=line_pairs``): a split is two files of one example a line, the source and
its target, side by side, as the Hugging Face and fairseq seq2seq examples keep a corpus.

``<data.path>/{split}.source`` + ``{split}.target``; also ``.src.cleaned`` + ``.tgt`` and ``.src`` + ``.tgt`` (the
original Multi-News release), the first pair found in that order. The validation split is ``val`` (else
``validation``), as NeuS and Multi-News ship it; another split name is its own stem. How a line holds an example is
the data config's :data:`~hiersum.config.data.LINE_LAYOUT_FIELDS`, which a preset sets:

- ``document_separator``: the source line is cut there into documents (None: one document);
- ``paragraph_markers``: each document is cut at every marker into paragraphs, the markers dropped (NeuS's
  ``TITLE=>`` and ``ARTICLE=>``: an article's headline is its first paragraph, its text the second; Multi-News's
  ``NEWLINE_CHAR``); whitespace is collapsed and empty documents and paragraphs are dropped, as the JSONL
  readers drop them;
- the target line is the reference: ``summary_prefix`` dropped from its start (Multi-News's ``–``), the text
  between markers a line each (a NeuS roundup: its headline, then its text), each line stripped.

The id of line N is ``<stem>-<N>``, the stem being the split's (``val-3`` for line 3 of ``val.source``): the
default id a JSONL file of that stem gives, and the id ``hiersum summarize`` gives a line of the source file alone,
so its predictions match the corpus in ``hiersum evaluate``. A line blank in both files is passed over.

A source and a target of different line counts are refused before any record is read (a :class:`UsageError`
naming both files and both counts: the pairs would be misaligned from the first missing line on). A line that is
not UTF-8, a source line without any text once cut (an empty line, nothing between the separators) or an empty
target is a :class:`RecordError` naming its file and line: the command stops on it, or with
``data.on_error=skip`` leaves it out and counts it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from hiersum.data.formats.lines import ParsedRecord
from hiersum.data.schema import DATA_DOCS, Example, RecordError
from hiersum.errors import UsageError

SPLIT_NAMES = {"train": "train", "validation": "val", "test": "test"}
"""hiersum split -> the layout's file stem (``validation``'s own name is looked for too)."""
SUFFIXES = ((".source", ".target"), (".src.cleaned", ".tgt"), (".src", ".tgt"))
"""(source suffix, target suffix) of a split's two files, in the order they are looked for."""
SOURCE_SUFFIXES = tuple(source for source, _ in SUFFIXES)


def is_source_file(path: str | Path) -> bool:
    """True for a file named as the source of a line pair (``val.source``, ``train.src``...)."""
    return Path(path).name.endswith(SOURCE_SUFFIXES)


def split_stem(path: str | Path) -> str:
    """The stem of a split file (``val`` of ``val.source``, ``train`` of ``train.src.cleaned``); a file of another
    name: its stem."""
    name = Path(path).name
    for suffix in SOURCE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return Path(path).stem


def pair_files(data_dir: str | Path, split: str) -> list[Path]:
    """``[source, target]`` of ``split`` in ``data_dir`` (see the module docstring); none found, or a source
    without its target, raises FileNotFoundError (one line)."""
    data_dir = Path(data_dir)
    stems = list(dict.fromkeys((SPLIT_NAMES.get(split, split), split)))
    for stem in stems:
        for source_suffix, target_suffix in SUFFIXES:
            source, target = data_dir / f"{stem}{source_suffix}", data_dir / f"{stem}{target_suffix}"
            if source.is_file():
                if not target.is_file():
                    raise FileNotFoundError(f"data split '{split}': found the source file {source} but not its "
                                            f"target {target.name} (see {DATA_DOCS})")
                return [source, target]
    expected = " or ".join(f"{data_dir / stem}.source and {stem}.target" for stem in stems)
    raise FileNotFoundError(f"data split '{split}' not found: expected the files {expected} (or .src / .src.cleaned "
                            f"and .tgt; see {DATA_DOCS})")


def count_lines(path: Path) -> int:
    """The lines of ``path``: its ``\\n`` bytes, plus one for a last line without one."""
    count, last = 0, b"\n"
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")


def _cut(text: str, markers: Sequence[str]) -> list[str]:
    """``text`` cut at every marker (the longest first where two start at one place), the markers dropped."""
    if not markers:
        return [text]
    pattern = "|".join(re.escape(marker) for marker in sorted(set(markers), key=len, reverse=True))
    return re.split(pattern, text)


def source_documents(text: str, *, path: str, line: int, document_separator: str | None = None,
                     paragraph_markers: Sequence[str] | None = None) -> list[list[str]]:
    """The documents of a source line, each a list of paragraphs (see the module docstring); none raises the
    line's :class:`RecordError`."""
    pieces = text.split(document_separator) if document_separator else [text]
    documents = []
    for piece in pieces:
        paragraphs = [" ".join(part.split()) for part in _cut(piece, paragraph_markers or ())]
        if paragraphs := [paragraph for paragraph in paragraphs if paragraph]:
            documents.append(paragraphs)
    if not documents:
        found = "an empty line" if not text.strip() else "no text once cut at the separators and markers"
        between = f" separated by {document_separator!r}" if document_separator else ""
        raise RecordError(path, line, None, f"expected the text of an example's documents{between}, found {found}",
                          record_id=f"{split_stem(path)}-{line}")
    return documents


def target_reference(text: str, *, path: str, line: int, paragraph_markers: Sequence[str] | None = None,
                     summary_prefix: str | None = None) -> str:
    """The reference of a target line (see the module docstring); an empty one raises the line's
    :class:`RecordError`."""
    text = text.strip()
    if summary_prefix:
        text = text.removeprefix(summary_prefix.strip() or summary_prefix)
    reference = "\n".join(part.strip() for part in _cut(text, paragraph_markers or ()) if part.strip())
    if not reference:
        raise RecordError(path, line, None, "expected a reference summary, found "
                          + ("an empty line" if not text.strip() else "none once the prefix and markers are dropped"),
                          record_id=f"{split_stem(path)}-{line}")
    return reference


def parse_source_line(text: str, *, path: str, line: int, require_summary: bool = False,
                      document_separator: str | None = None, paragraph_markers: Sequence[str] | None = None,
                      summary_prefix: str | None = None) -> Example:
    """One line of a source file alone, without its reference: what ``hiersum summarize`` reads
    (``input_format=line_pairs``). ``require_summary``: refused, a source line holds no reference."""
    if require_summary:
        raise RecordError(path, line, None, "expected a reference summary: a source line holds none, its target "
                          "file does (read the split: data.format=line_pairs)")
    documents = source_documents(text, path=path, line=line, document_separator=document_separator,
                                 paragraph_markers=paragraph_markers)
    return Example(id=f"{split_stem(path)}-{line}", title="", documents=documents)


def _decoded(raw: bytes, path: str, line: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RecordError(path, line, None, f"expected UTF-8 text, found an invalid byte at column {error.start + 1}",
                          record_id=f"{split_stem(path)}-{line}") from None


def read_line_pairs(files: Sequence[Path], *, document_separator: str | None = None,
                    paragraph_markers: Sequence[str] | None = None, summary_prefix: str | None = None,
                    ) -> Iterator[ParsedRecord]:
    """Every record of a split, ``files`` its ``[source, target]`` (:func:`pair_files`): an :class:`Example` or
    the :class:`RecordError` of each line pair; different line counts raise :class:`UsageError` at the first
    ``next``, before any record."""
    source, target = (Path(path) for path in files)
    counts = count_lines(source), count_lines(target)
    if counts[0] != counts[1]:
        raise UsageError(f"{source} has {counts[0]} lines but {target} has {counts[1]}: expected one target line for "
                         f"each source line (see {DATA_DOCS})")
    stem = split_stem(source)
    with open(source, "rb") as sources, open(target, "rb") as targets:
        for line, (raw_source, raw_target) in enumerate(zip(sources, targets, strict=True), start=1):
            if not raw_source.strip() and not raw_target.strip():
                continue
            try:
                documents = source_documents(_decoded(raw_source, str(source), line), path=str(source), line=line,
                                             document_separator=document_separator,
                                             paragraph_markers=paragraph_markers)
                reference = target_reference(_decoded(raw_target, str(target), line), path=str(target), line=line,
                                             paragraph_markers=paragraph_markers, summary_prefix=summary_prefix)
            except RecordError as error:
                yield error
                continue
            yield Example(id=f"{stem}-{line}", title="", documents=documents, references=[reference])
