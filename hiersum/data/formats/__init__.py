"""The input formats of hiersum: one module per format, the registry that names them, and the reader of
batch-summarization inputs.

:mod:`~hiersum.data.formats.native`
    native JSONL (``data.format=jsonl``, ``input_format=native``)
:mod:`~hiersum.data.formats.multinews`, :mod:`~hiersum.data.formats.scitldr`, :mod:`~hiersum.data.formats.cnndm`
    the Multi-News, SciTLDR and CNN/DailyMail releases as they ship
:mod:`~hiersum.data.formats.aeslc`
    the AESLC release, one email a ``.subject`` file (a training and evaluation format only)
:mod:`~hiersum.data.formats.line_pairs`
    the line-pair layout, ``{split}.source`` + ``{split}.target`` one example a line (NeuS, the original Multi-News
    release); a source file alone is an input of ``hiersum summarize``
:mod:`~hiersum.data.formats.wikisum`
    the ranked WikiSum shards of SentencePiece ids (a training format only)
:mod:`~hiersum.data.formats.text`
    plain ``.txt`` files (an input of ``hiersum summarize`` only)
:mod:`~hiersum.data.formats.lines`
    what the line formats share: a JSON object a line, paragraphs, records or errors
:mod:`~hiersum.data.formats.registry`
    ``data.format`` -> :class:`~hiersum.data.formats.registry.FormatSpec` (how a split is read)
:mod:`~hiersum.data.formats.inputs`
    the inputs of ``hiersum summarize`` (``input_format``: ``auto``, ``text`` and every line format);
    its names are importable from this package (``from hiersum.data.formats import read_records``)
"""

from hiersum.data.formats.inputs import (
    INPUT_MODES,
    STDIN,
    STDIN_NAME,
    InputError,
    detect_json_format,
    input_formats,
    read_records,
)
from hiersum.data.formats.multinews import MULTINEWS_ARTICLE_SEPARATOR, parse_multinews_record
from hiersum.data.formats.text import parse_text, read_text_file

__all__ = ["INPUT_MODES", "MULTINEWS_ARTICLE_SEPARATOR", "STDIN", "STDIN_NAME", "InputError", "detect_json_format",
           "input_formats", "parse_multinews_record", "parse_text", "read_records", "read_text_file"]
