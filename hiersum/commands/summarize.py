"""``hiersum summarize``: summarize records with a checkpoint, resumably (:func:`summarize`).

The story of :func:`summarize`: typed config -> the output checked against the inputs -> load the model
(:mod:`hiersum.checkpoints`) -> read the records still to write (:mod:`hiersum.data.formats`) -> select
and encode their paragraphs (:mod:`hiersum.data.selection`) -> decode them in token-budget batches
(:mod:`hiersum.inference`) -> write each summary, in input order, as soon as every earlier one
is done. :func:`output_records` (records -> output lines) is also what ``hiersum serve`` answers with.

Input: native JSONL, Multi-News JSONL, a ``.txt`` file or a folder of them, or ``-`` (stdin);
see :mod:`hiersum.data.formats` and ``input_format``.

Output: one JSON object a line per valid input record, in input order: ``id``, ``summary``,
``score`` (length-penalised log-prob), ``n_paragraphs_kept``, ``n_paragraphs_dropped`` and, when
``decode.n_best`` > 1, ``n_best`` (a list of ``{"summary", "score"}``, best first). ``output=-``
writes to stdout.

Resume: with ``resume=true`` (default) the ids already in the output file are skipped and the
others appended, so rerunning a killed command completes the file with every id exactly once
(each line is written with a single write, a partial last line is cut on start); the output's
``<stem>.provenance.json`` must say it was made by the same checkpoint, input and options, or the run stops
in one line (``overwrite=true`` starts afresh). An output (or a file beside it) that is the input or the
checkpoint, or that cannot be written, is refused before anything is written; Ctrl-C, SIGTERM or a full
disk stop the run in one line with every written line complete (:mod:`hiersum.commands.record_output`).
An input with no record is a one-line warning (an error with ``strict=true``). The run holds the output's lock
while it writes (:mod:`hiersum.data.output_lock`): a second process on the same output is refused at once.

Malformed records (bad JSON, missing or wrong-typed field, empty document, invalid UTF-8) and
repeated ids (every occurrence after the first; see :mod:`hiersum.data.formats`) are reported on stderr and in
``<output stem>.errors.jsonl`` (``file``, ``line``, ``id``, ``field``, ``reason``) and counted in
:attr:`SummarizeResult.errors`; the others are summarized. A problem with the command itself (missing
checkpoint, unreadable input, bad option) raises :class:`hiersum.config.UsageError`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from omegaconf import DictConfig

from hiersum.checkpoints.io import Summarizer
from hiersum.commands.common import checked_device, checkpoint_tokenizer, load_checkpoint
from hiersum.commands.composed import command_config
from hiersum.commands.record_output import (
    Provenance,
    begin_output,
    pending_records,
    refuse_empty_input,
    refuse_record_output_over_inputs,
    start_output,
    stopping_in_one_line,
)
from hiersum.commands.shards import Shard, run_on_devices, shard_target
from hiersum.config import DataConfig, DecodeConfig, SummarizeConfig, UsageError
from hiersum.data.jsonl_output import JsonlAppender
from hiersum.data.output_lock import output_lock
from hiersum.data.schema import EncodedExample
from hiersum.data.selection import SELECTION_FIELDS, SelectionConfig, encode_examples, selection_config
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.inference.batched import Summary, progress_bar, summarize_encoded
from hiersum.model.encoder_registry import encoder_spec

USAGE = "hiersum summarize checkpoint=CKPT input=IN output=OUT"


@dataclass(frozen=True)
class SummarizeResult:
    written: int
    """Summaries written by this run."""
    already_done: int
    """Valid input records whose summary was already in the output (resume)."""
    errors: int
    """Records refused (malformed or repeated id)."""


def summarize(cfg: SummarizeConfig | DictConfig) -> SummarizeResult:
    """Summarize ``cfg.input`` into ``cfg.output`` (see the module docstring); ``cfg``: the typed config,
    or the composed Hydra config it is converted from."""
    cfg = command_config(cfg, SummarizeConfig, usage=USAGE)
    refuse_record_output_over_inputs(cfg.output, {"input": cfg.input, "checkpoint": cfg.checkpoint})
    if cfg.devices > 1:
        return _summarize_on_devices(cfg)
    shard, output = shard_target(cfg)
    with output_lock(output):  # one writer: a second process on this output is refused here
        return _summarize_into(output, shard, cfg)


def _summarize_into(output: str, shard: Shard | None, cfg: SummarizeConfig) -> SummarizeResult:
    """:func:`summarize` of one process into ``output`` (the output, or the file of ``shard``), whose lock it holds."""
    checked_device(cfg.device, cfg.precision)
    summarizer = load_checkpoint(cfg.checkpoint, compile=cfg.compile)
    tokenizer = _tokenizer(summarizer, cfg)
    selection = record_selection(cfg, summarizer)
    options = {**_output_options(cfg), **({"shard": str(shard)} if shard else {})}
    provenance = Provenance.of("summarize", model=cfg.checkpoint, source=cfg.input, options=options)
    afresh = start_output(output, provenance, resume=cfg.resume and not cfg.overwrite)
    records = pending_records(cfg.input, output, input_format=cfg.input_format, resume=not afresh,
                              keeps=shard.keeps if shard else None)
    refuse_empty_input(records, cfg.input, strict=cfg.strict)
    begin_output(output, provenance, afresh=afresh)
    memory_hint = (f"lower batch_tokens (now {cfg.batch_tokens}) or decode.batch_size (now {cfg.decode.batch_size}); "
                   f"beams multiply it (decode.beam_size={cfg.decode.beam_size})")
    with (stopping_in_one_line("summarize", output, "summaries", memory_hint=memory_hint) as written,
          JsonlAppender(records.output) as writer, progress_bar("summarizing") as bar):
        task = bar.add_task("summarize", total=len(records.pending))
        for start in range(0, len(records.pending), cfg.sort_window):
            encoded = encode_examples(records.pending[start : start + cfg.sort_window], tokenizer, selection)
            written.lines += _summarize_window(summarizer, encoded, tokenizer, cfg, writer,
                                               lambda n: bar.advance(task, n))
    result = SummarizeResult(written=written.lines, already_done=records.already_done, errors=len(records.errors))
    print(f"wrote {result.written} summaries to {records.output or 'stdout'} "
          f"({result.already_done} already there); {result.errors} records refused", file=sys.stderr)
    return result


def _summarize_on_devices(cfg: SummarizeConfig) -> SummarizeResult:
    """``devices=N``: the shards in N processes, merged into the output (:mod:`hiersum.commands.shards`)."""
    merged = run_on_devices(cfg, summarize, "summarize")
    print(f"merged the {cfg.devices} shards ({merged} summaries) into {cfg.output}", file=sys.stderr)
    return SummarizeResult(written=merged, already_done=0, errors=0)


def _output_options(cfg: SummarizeConfig) -> dict[str, Any]:
    """The options that change a summary line (recorded in the output's provenance)."""
    names = ("input_format", "precision", "max_paragraphs", "max_paragraph_tokens", "selection", "ranker",
             "attention", "attention_top_k")
    return {"decode": asdict(cfg.decode), **{name: getattr(cfg, name) for name in names}}


def _tokenizer(summarizer: Summarizer, cfg: SummarizeConfig) -> SubwordTokenizer:
    if cfg.attention and not encoder_spec(summarizer.model_config.encoder).inter_paragraph:
        raise UsageError(f"attention=true needs a model with inter-paragraph attention; this checkpoint's "
                         f"encoder is {summarizer.model_config.encoder}")
    return checkpoint_tokenizer(summarizer, cfg.checkpoint)


def record_selection(cfg: Any, summarizer: Summarizer) -> SelectionConfig:
    """The checkpoint's paragraph selection (as for evaluation), with ``max_paragraphs`` etc. overridden
    when given: ``cfg`` is a :class:`SummarizeConfig` or another command's config with those fields (``serve``)."""
    data = summarizer.data_config or DataConfig(path="")
    given = {name: getattr(cfg, name) for name in SELECTION_FIELDS if getattr(cfg, name, None) is not None}
    if "max_paragraphs" in given:
        given["eval_max_paragraphs"] = None  # the command line wins over the checkpoint's evaluation setting
    try:
        return selection_config(replace(data, **given), graph=summarizer.model_config.graph, evaluation=True)
    except ValueError as error:
        raise UsageError(str(error)) from None


def _summarize_window(summarizer: Summarizer, encoded: list[EncodedExample], tokenizer: SubwordTokenizer,
                      cfg: SummarizeConfig, writer: JsonlAppender, advance: Any) -> int:
    """Decode one window of records in token-budget batches and write their summaries in input order as soon
    as every earlier one is done (synced after each batch); returns how many were written."""
    results: list[dict[str, Any] | None] = [None] * len(encoded)
    next_index = 0  # first result of this window not yet written
    options = RecordOptions(decode=cfg.decode, batch_tokens=cfg.batch_tokens, device=cfg.device,
                            precision=cfg.precision, attention_top_k=cfg.attention_top_k if cfg.attention else 0)
    for indices, records in output_records(summarizer, encoded, tokenizer, options):
        for index, record in zip(indices, records, strict=True):
            results[index] = record
        while next_index < len(results) and results[next_index] is not None:
            writer.write(results[next_index])
            next_index += 1
        writer.sync()
        advance(len(indices))
    return next_index


@dataclass(frozen=True)
class RecordOptions:
    """What, besides the model and the record, decides an output line (:func:`output_records`)."""

    decode: DecodeConfig
    batch_tokens: int
    """Token budget of a decoding batch (examples x paragraphs x tokens)."""
    device: str
    precision: str
    attention_top_k: int
    """Most attended paragraphs added to each line (``top_paragraphs``); 0 adds none."""
    deadlines: tuple[float | None, ...] | None = None
    """Per record, a ``time.monotonic()`` past which its decoding stops and it has no line (``hiersum serve``'s
    timeout); None: none."""


def output_records(summarizer: Summarizer, encoded: Sequence[EncodedExample], tokenizer: SubwordTokenizer,
                   options: RecordOptions) -> Iterator[tuple[list[int], list[dict[str, Any] | None]]]:
    """The output lines of ``encoded`` (:func:`output_record`), decoded in token-budget batches: yields
    (indices into ``encoded``, their lines: None for a record past its deadline) batch by batch. What ``hiersum
    summarize`` writes and ``hiersum serve`` answers."""
    for indices, summaries in summarize_encoded(
        summarizer.model, encoded, tokenizer, options.decode, batch_tokens=options.batch_tokens,
        device=options.device, precision=options.precision, attention_top_k=options.attention_top_k,
        deadlines=options.deadlines,
    ):
        yield indices, [None if summary is None else output_record(summary, encoded[index],
                                                                   n_best=options.decode.n_best > 1)
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
