"""Records to output lines: what ``hiersum summarize`` writes, ``hiersum serve`` answers and
:meth:`hiersum.inference.pipeline.TextSummarizer.summarize` returns, for the same record and options.

A record is a native JSON object (``{"id", "title", "documents"}``) or plain text (``{"text"}``:
:func:`example_of`); its paragraphs are chosen as the checkpoint chose them, unless the options override
(:func:`record_selection`); its line (:func:`output_record`) holds ``id``, ``summary``, ``score``,
``n_paragraphs_kept``, ``n_paragraphs_dropped``, and ``n_best`` and ``top_paragraphs`` when asked for.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from hiersum.checkpoints.io import TrainedNetwork
from hiersum.config import DataConfig, DecodeConfig, RecordConfig
from hiersum.data.formats.native import parse_record
from hiersum.data.formats.text import parse_text
from hiersum.data.schema import EncodedExample, Example, RecordError
from hiersum.data.selection import TITLE_DOCUMENT, SelectionConfig, selection_config
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.errors import UsageError
from hiersum.inference.batched import Summary, summarize_encoded


def record_selection(config: RecordConfig, summarizer: TrainedNetwork) -> SelectionConfig:
    """The checkpoint's paragraph selection (as for evaluation), with the fields ``config`` gives
    (``max_paragraphs``, ``max_paragraph_tokens``, ``selection``, ``ranker``; None keeps the checkpoint's)."""
    data = summarizer.data_config or DataConfig(path="")
    given = {name: value for name, value in (("max_paragraphs", config.max_paragraphs),
                                             ("max_paragraph_tokens", config.max_paragraph_tokens),
                                             ("selection", config.selection), ("ranker", config.ranker))
             if value is not None}
    if "max_paragraphs" in given:
        given["eval_max_paragraphs"] = None  # the command line wins over the checkpoint's evaluation setting
    try:
        return selection_config(replace(data, **given), graph=summarizer.model_config.graph, evaluation=True)
    except ValueError as error:
        raise UsageError(str(error)) from None


def output_records(summarizer: TrainedNetwork, encoded: Sequence[EncodedExample], tokenizer: SubwordTokenizer,
                   config: RecordConfig, *, device: str, attention_top_k: int, decode: DecodeConfig | None = None,
                   deadlines: Sequence[float | None] | None = None,
                   ) -> Iterator[tuple[list[int], list[dict[str, Any] | None]]]:
    """The output lines of ``encoded`` (:func:`output_record`), decoded on ``device`` with ``config``'s search
    settings (``decode``: others, a request's), precision and token budget: yields (indices into ``encoded``, their
    lines: None for a record past its deadline) batch by batch. What ``hiersum summarize`` writes and ``hiersum
    serve`` answers.

    ``attention_top_k``: the most attended paragraphs added to each line (``top_paragraphs``; 0 adds none);
    ``deadlines``: per record, a ``time.monotonic()`` past which its decoding stops and it has no line
    (``hiersum serve``'s timeout)."""
    decode = decode or config.decode
    for indices, summaries in summarize_encoded(
        summarizer.model, encoded, tokenizer, decode, batch_tokens=config.batch_tokens, device=device,
        precision=str(config.precision), attention_top_k=attention_top_k, deadlines=deadlines,
    ):
        yield indices, [None if summary is None else output_record(summary, encoded[index], n_best=decode.n_best > 1)
                        for index, summary in zip(indices, summaries, strict=True)]


def output_record(summary: Summary, source: EncodedExample, *, n_best: bool) -> dict[str, Any]:
    """The output line of one summary (see the module docstring)."""
    record: dict[str, Any] = {
        "id": summary.id, "summary": summary.summary, "score": summary.score,
        "n_paragraphs_kept": len(source.paragraphs), "n_paragraphs_dropped": source.n_dropped_paragraphs,
    }
    if n_best:
        record["n_best"] = [{"summary": text, "score": score} for text, score in summary.n_best]
    if summary.top_paragraphs is not None:
        record["top_paragraphs"] = [
            {"document": document, "paragraph": paragraph, "weight": weight}
            for document, paragraph, weight in summary.top_paragraphs
        ]
    return record


def example_of(record: dict[str, Any], *, source: str, line: int) -> Example:
    """The :class:`Example` of a native record, or with ``text`` (and no ``documents``) of a plain-text one
    (one document, paragraphs separated by blank lines), checked as the batch readers check them; a wrong field
    raises :class:`RecordError` (``source``, ``line``: where the record comes from; its default id is
    ``<source>-<line>``)."""
    if "text" in record and "documents" not in record:
        text = record["text"]
        if not isinstance(text, str):
            raise RecordError(source, line, "text", f"expected a string, found {type(text).__name__}")
        record_id = record.get("id", f"{source}-{line}")
        if not isinstance(record_id, (str, int)):
            raise RecordError(source, line, "id", f"expected a string, found {type(record_id).__name__}")
        parsed = parse_text(text.encode("utf-8", "surrogatepass"), path=source, record_id=str(record_id))
        if isinstance(parsed, RecordError):
            raise RecordError(source, line, "text", parsed.reason)
        return parsed
    return parse_record(json.dumps(record), path=source, line=line, require_summary=False)


def attended_paragraphs(record: dict[str, Any], example: Example) -> list[dict[str, Any]]:
    """The ``top_paragraphs`` of an output line with their text (``text``, ``document``, ``paragraph``,
    ``attention``; highest weight first); [] when the line has none."""
    return [
        {"text": example.title if entry["document"] == TITLE_DOCUMENT else
         example.documents[entry["document"]][entry["paragraph"]],
         "document": entry["document"], "paragraph": entry["paragraph"], "attention": entry["weight"]}
        for entry in record.get("top_paragraphs", [])
    ]
