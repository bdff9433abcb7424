"""CNN/DailyMail (Hermann et al. 2015; See et al. 2017), in the columns of the public ``cnn_dailymail``
dataset: ``id``, ``article``, ``highlights``.

Read as parquet files or a ``datasets`` ``save_to_disk`` folder (:mod:`hiersum.data.formats.arrow`), or as
JSONL, one object a line with those fields (splits ``DIR/{train,validation,test}.jsonl``). The ``article``
becomes one document whose paragraphs are what blank lines give (the release has none: one paragraph);
``highlights`` the reference, one sentence a line (lines kept, whitespace inside a line collapsed), the form
ROUGE-Lsum reads. ``id`` is optional (default ``<file stem>-<line>``). An empty article is a
:class:`RecordError` (the public train split holds some: ``data.on_error=skip`` leaves them out).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hiersum.data.formats.lines import load_json_object, split_paragraphs
from hiersum.data.schema import Example, RecordError


def highlight_lines(text: str) -> str:
    """The highlights one sentence a line: each line's whitespace collapsed, blank lines dropped."""
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def parse_cnndm_record(text: str, *, path: str, line: int, require_summary: bool = True) -> Example:
    """Parse and validate one CNN/DailyMail JSON line into an :class:`Example`."""
    return parse_cnndm_object(load_json_object(text, path=path, line=line), path=path, line=line,
                              require_summary=require_summary)


def parse_cnndm_object(record: dict[str, Any], *, path: str, line: int, require_summary: bool = True) -> Example:
    """Validate one CNN/DailyMail record (a JSON line's object, or a row of a parquet / Arrow corpus) into an
    :class:`Example`; ``line``: its line (row) in ``path``."""
    record_id = record.get("id", f"{Path(path).stem}-{line}")
    if not isinstance(record_id, (str, int)):
        raise RecordError(path, line, "id", f"expected a string, found {type(record_id).__name__}")

    def error(field: str, message: str) -> RecordError:
        return RecordError(path, line, field, message, record_id=str(record_id))

    if "article" not in record:
        raise error("article", "expected the article's text, found no such field")
    article, highlights = record["article"], record.get("highlights")
    if not isinstance(article, str):
        raise error("article", f"expected a string, found {type(article).__name__}")
    paragraphs = split_paragraphs(article)
    if not paragraphs:
        raise error("article", "expected some text, found an empty article")
    if highlights is not None and not isinstance(highlights, str):
        raise error("highlights", f"expected a string, found {type(highlights).__name__}")
    reference = highlight_lines(highlights or "")
    if require_summary and not reference:
        found = "no such field" if highlights is None else "an empty one"
        raise error("highlights", f"expected the reference highlights, found {found}")
    return Example(id=str(record_id), title="", documents=[paragraphs], references=[reference] if reference else [])
