"""Summarizing records with a checkpoint, resumably: what ``hiersum-summarize`` runs (:func:`summarize`).

Input: native JSONL, Multi-News JSONL, a ``.txt`` file or a folder of them, or ``-`` (stdin);
see :mod:`hiersum.data.formats` and ``input_format``.

Output: one JSON object a line per valid input record, in input order: ``id``, ``summary``,
``score`` (length-penalised log-prob), ``n_paragraphs_kept``, ``n_paragraphs_dropped`` and, when
``decode.n_best`` > 1, ``n_best`` (a list of ``{"summary", "score"}``, best first). ``output=-``
writes to stdout.

Resume: with ``resume=true`` (default) the ids already in the output file are skipped and the
others appended, so rerunning a killed command completes the file with every id exactly once
(each line is written with a single write, a partial last line is cut on start). An output (or its
errors file) that is the input or the checkpoint is refused before anything is written
(:mod:`hiersum.data.overwrite`).

Malformed records (bad JSON, missing or wrong-typed field, empty document, invalid UTF-8) and
repeated ids (every occurrence after the first; see :mod:`hiersum.data.formats`) are reported on stderr and in
``<output stem>.errors.jsonl`` (``file``, ``line``, ``id``, ``field``, ``reason``) and counted in
:attr:`SummarizeResult.errors`; the others are summarized. A problem with the command itself (missing
checkpoint, unreadable input, bad option) raises :class:`hiersum.config.UsageError`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig
from omegaconf.errors import MissingMandatoryValue

from hiersum.checkpoints.io import Summarizer, load_summarizer
from hiersum.config import DataConfig, DecodeConfig, UsageError, typed_config
from hiersum.data.formats import STDIN, InputError, read_records
from hiersum.data.jsonl_output import JsonlAppender, OutputError, completed_ids, write_jsonl_atomically
from hiersum.data.overwrite import refuse_overwriting_inputs
from hiersum.data.schema import EncodedExample, Example, RecordError
from hiersum.data.selection import SELECTION_FIELDS, SelectionConfig, encode_examples, selection_config
from hiersum.decoding.inference import PRECISIONS, Summary, progress_bar, summarize_encoded
from hiersum.model.encoders import encoder_spec


@dataclass(frozen=True)
class SummarizeResult:
    written: int
    """Summaries written by this run."""
    already_done: int
    """Valid input records whose summary was already in the output (resume)."""
    errors: int
    """Records refused (malformed or repeated id)."""


def errors_path(output: Path) -> Path:
    """``out.jsonl`` -> ``out.errors.jsonl``."""
    return output.with_name(output.stem + ".errors.jsonl")


def collect(records: Iterable[Example | RecordError]) -> tuple[list[Example], list[RecordError]]:
    """Split valid examples from refused records, each in input order."""
    examples: list[Example] = []
    errors: list[RecordError] = []
    for item in records:
        (errors if isinstance(item, RecordError) else examples).append(item)
    return examples, errors


def output_record(summary: Summary, source: EncodedExample, *, n_best: bool) -> dict[str, Any]:
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


def required_option(cfg: DictConfig, name: str, usage: str) -> Any:
    """``cfg[name]``; a missing (``???``) value is a usage error naming it and the command's ``usage``."""
    try:
        return cfg[name]
    except MissingMandatoryValue:
        raise UsageError(f"missing {name}=...; {usage}") from None


def _option(cfg: DictConfig, name: str) -> Any:
    return required_option(cfg, name, "usage: hiersum-summarize checkpoint=CKPT input=IN output=OUT")


def checked_device(device: str) -> str:
    """The kind (``cpu`` / ``cuda``) of ``device``; a malformed device or an absent CUDA is a :class:`UsageError`.
    Shared by hiersum-summarize and hiersum-rank."""
    try:
        kind = torch.device(device).type
    except RuntimeError:
        raise UsageError(f"device must be cpu or cuda[:N]; found {device!r}") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise UsageError("device=cuda asked for, but no CUDA device is available")
    return kind


def _checked_device(device: str, precision: str) -> None:
    if precision not in PRECISIONS:
        raise UsageError(f"precision must be one of 32, bf16, 16; found {precision!r}")
    kind = checked_device(device)
    if kind == "cpu" and precision == "16":
        raise UsageError("precision=16 needs device=cuda (on cpu use precision=bf16)")


def load_checkpoint(checkpoint: str) -> Summarizer:
    """:func:`load_summarizer`; a missing, unreadable or mismatched checkpoint is a :class:`UsageError`."""
    try:
        return load_summarizer(checkpoint)
    except (OSError, ValueError, RuntimeError) as error:
        raise UsageError(f"cannot load checkpoint: {error}") from None


def _selection(cfg: DictConfig, summarizer: Summarizer) -> SelectionConfig:
    """The checkpoint's paragraph selection (as for evaluation), with ``max_paragraphs`` etc.
    overridden when given."""
    data = summarizer.data_config or DataConfig(path="")
    given = {name: cfg[name] for name in SELECTION_FIELDS if cfg.get(name) is not None}
    if "max_paragraphs" in given:
        given["eval_max_paragraphs"] = None  # the command line wins over the checkpoint's evaluation setting
    try:
        return selection_config(replace(data, **given), graph=summarizer.model_config.graph, evaluation=True)
    except ValueError as error:
        raise UsageError(str(error)) from None


@dataclass
class PendingRecords:
    """What :func:`pending_records` returns."""

    pending: list[Example]
    """The records of the input still to write, in input order."""
    errors: list[RecordError]
    """Its malformed records."""
    output: Path | None
    """The output file; None for stdout."""
    already_done: int
    """Records the output already held (``resume``)."""


def refuse_record_output_over_inputs(target: str, inputs: dict[str, str | None]) -> None:
    """:func:`refuse_overwriting_inputs` for a record-by-record output ``target`` and its errors file.
    Shared by hiersum-summarize and hiersum-rank."""
    outputs = {} if target == STDIN else {"output": target, "the errors file of output": errors_path(Path(target))}
    refuse_overwriting_inputs(outputs, inputs)


def pending_records(source: str, target: str, *, input_format: str, resume: bool) -> PendingRecords:
    """The records of ``source`` still to write to ``target``: a malformed record is reported on stderr
    and listed in the errors file beside the output; with ``resume``, the ids the output already holds
    are left out. Shared by hiersum-summarize and hiersum-rank."""
    try:
        examples, errors = collect(read_records(source, input_format=input_format))
    except InputError as error:
        raise UsageError(str(error)) from None
    output = None if target == STDIN else Path(target)
    try:
        done = set(completed_ids(output)) if output is not None and resume else set()
    except OutputError as error:
        raise UsageError(str(error)) from None
    for error in errors:
        print(f"skipped malformed record: {error}", file=sys.stderr)
    if output is not None:
        write_errors(errors_path(output), errors)
    pending = [example for example in examples if example.id not in done]
    return PendingRecords(pending, errors, output, already_done=len(examples) - len(pending))


def summarize(cfg: DictConfig) -> SummarizeResult:
    """Summarize ``cfg.input`` into ``cfg.output`` (see the module docstring)."""
    checkpoint, source, target = (str(_option(cfg, name)) for name in ("checkpoint", "input", "output"))
    refuse_record_output_over_inputs(target, {"input": source, "checkpoint": checkpoint})
    device, precision = str(cfg.device), str(cfg.precision)
    _checked_device(device, precision)
    decode: DecodeConfig = typed_config(cfg.decode)
    summarizer = load_checkpoint(checkpoint)
    if cfg.attention and not encoder_spec(summarizer.model_config.encoder).inter_paragraph:
        raise UsageError(f"attention=true needs a model with inter-paragraph attention; this checkpoint's "
                         f"encoder is {summarizer.model_config.encoder}")
    try:
        tokenizer = summarizer.tokenizer()
    except ValueError as error:
        raise UsageError(f"{checkpoint}: {error}") from None
    selection = _selection(cfg, summarizer)
    if cfg.sort_window < 1 or cfg.batch_tokens < 1:
        raise UsageError(f"sort_window and batch_tokens must be >= 1; found {cfg.sort_window}, {cfg.batch_tokens}")
    records = pending_records(source, target, input_format=str(cfg.input_format), resume=cfg.resume)
    pending, errors, output = records.pending, records.errors, records.output
    written = 0
    with JsonlAppender(output, truncate=not cfg.resume) as writer, progress_bar("summarizing") as bar:
        task = bar.add_task("summarize", total=len(pending))
        for start in range(0, len(pending), cfg.sort_window):
            encoded = encode_examples(pending[start : start + cfg.sort_window], tokenizer, selection)
            results: list[dict[str, Any] | None] = [None] * len(encoded)
            next_index = 0  # first result of this window not yet written
            for indices, summaries in summarize_encoded(
                summarizer.model, encoded, tokenizer, decode, batch_tokens=cfg.batch_tokens, device=device,
                precision=precision, attention_top_k=cfg.attention_top_k if cfg.attention else 0,
            ):
                for index, summary in zip(indices, summaries, strict=True):
                    results[index] = output_record(summary, encoded[index], n_best=decode.n_best > 1)
                while next_index < len(results) and results[next_index] is not None:
                    writer.write(results[next_index])
                    next_index += 1
                writer.sync()
                bar.advance(task, len(indices))
            written += next_index
    result = SummarizeResult(written=written, already_done=records.already_done, errors=len(errors))
    print(f"wrote {result.written} summaries to {'stdout' if output is None else output} "
          f"({result.already_done} already there); {result.errors} records refused", file=sys.stderr)
    return result


def write_errors(path: Path, errors: list[RecordError]) -> None:
    """The errors of this run replace those of an earlier one (the same input gives the same errors)."""
    if errors:
        write_jsonl_atomically(path, [e.as_record() for e in errors])
    else:
        path.unlink(missing_ok=True)
