"""``hiersum summarize``: summarize records with a checkpoint, resumably (:func:`summarize`).

The story of :func:`summarize`: typed config -> the output checked against the inputs -> the summarizer
(:func:`hiersum.inference.load_summarizer`, what ``hiersum serve`` and Python load too) -> read the records still
to write (:mod:`hiersum.data.formats`) -> window by window, their lines (:meth:`hiersum.inference.Summarizer.lines`:
paragraphs selected and encoded, decoded in token-budget batches) -> each written, in input order, as soon as every
earlier one is done, through :class:`hiersum.inference.resumable_output.ResumableOutput`.

Input: native JSONL, Multi-News JSONL, a ``.txt`` file or a folder of them, the source file of a line pair
(``val.source``: NeuS, the original Multi-News release), or ``-`` (stdin); see :mod:`hiersum.data.formats` and
``input_format``. A line pair's layout (``document_separator``, ``paragraph_markers``) not given is the checkpoint's
(``data.document_separator``...: a model trained with ``data=neus`` reads ``test.source`` as it was trained).

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
disk stop the run in one line with every written line complete (:mod:`hiersum.inference.resumable_output`).
An input with no record is a one-line warning (an error with ``strict=true``). The run holds the output's lock
while it writes (:mod:`hiersum.data.output_lock`): a second process on the same output is refused at once.

Malformed records (bad JSON, missing or wrong-typed field, empty document, invalid UTF-8) and
repeated ids (every occurrence after the first; see :mod:`hiersum.data.formats`) are reported on stderr and in
``<output stem>.errors.jsonl`` (``file``, ``line``, ``id``, ``field``, ``reason``) and counted in
:attr:`SummarizeResult.errors`; the others are summarized. A problem with the command itself (missing
checkpoint, unreadable input, bad option) raises :class:`hiersum.errors.UsageError`.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Collection
from dataclasses import asdict, replace
from typing import Any

from omegaconf import DictConfig

from hiersum.checkpoints import load_network
from hiersum.commands.common import rerun_command
from hiersum.commands.composed import command_config
from hiersum.commands.shards import Shard, run_on_devices, shard_target
from hiersum.config import SELECTION_FIELDS, DataConfig, SummarizeConfig
from hiersum.data.formats.inputs import reads_line_pairs
from hiersum.data.output_lock import output_lock
from hiersum.data.schema import Example
from hiersum.data.selection import EncodingConfig
from hiersum.errors import UsageError
from hiersum.inference.pipeline import Summarizer, load_summarizer
from hiersum.inference.resumable_output import (
    LineWriter,
    OutputResult,
    Provenance,
    ResumableOutput,
    refuse_output_over_inputs,
)

USAGE = "hiersum summarize checkpoint=CKPT input=IN output=OUT"


SummarizeResult = OutputResult
"""What :func:`summarize` returns (``written``, ``already_done``, ``errors``), the result of ``hiersum rank`` too."""


def summarize(cfg: SummarizeConfig | DictConfig, decode_given: Collection[str] | None = None) -> SummarizeResult:
    """Summarize ``cfg.input`` into ``cfg.output`` (see the module docstring); ``cfg``: the typed config,
    or the composed Hydra config it is converted from. ``decode_given``: the ``decode`` fields the command line
    gave (:func:`hiersum.cli.overrides.given_decode_fields`); the others are the search settings the checkpoint's
    training run recorded, where it recorded them. None: ``cfg.decode`` whole."""
    cfg = command_config(cfg, SummarizeConfig, usage=USAGE)
    refuse_output_over_inputs(cfg.output, {"input": cfg.input, "checkpoint": cfg.checkpoint})
    if cfg.devices > 1:
        return _summarize_on_devices(cfg, decode_given)
    shard, output = shard_target(cfg)
    with output_lock(output):  # one writer: a second process on this output is refused here
        return _summarize_into(output, shard, cfg, decode_given)


def _summarize_into(output: str, shard: Shard | None, cfg: SummarizeConfig,
                    decode_given: Collection[str] | None) -> SummarizeResult:
    """:func:`summarize` of one process into ``output`` (the output, or the file of ``shard``), whose lock it holds."""
    summarizer = load_summarizer(cfg.checkpoint, device=cfg.device, precision=str(cfg.precision),
                                 batch_tokens=cfg.batch_tokens, compile=cfg.compile)
    # the checkpoint's recorded search settings but for the fields given
    cfg = replace(cfg, decode=summarizer.decoding(cfg.decode, decode_given))
    cfg = with_trained_layout(cfg, summarizer.data_config)  # a line pair's separators as trained, unless given
    if cfg.attention and not summarizer.inter_paragraph:
        raise UsageError(f"attention=true needs a model with inter-paragraph attention; this checkpoint's "
                         f"encoder is {summarizer.network.model_config.encoder}")
    selection = summarizer.selection(cfg)
    options = {**_output_options(cfg), **({"shard": str(shard)} if shard else {})}
    provenance = Provenance.of("summarize", model=cfg.checkpoint, source=cfg.input, options=options)
    out = ResumableOutput(output, provenance, noun="summaries", rerun=rerun_command("summarize"))
    pending = out.start(cfg.input, input_format=cfg.input_format, resume=cfg.resume and not cfg.overwrite,
                        strict=cfg.strict, keeps=shard.keeps if shard else None, layout=cfg.input_layout())
    memory_hint = (f"lower batch_tokens (now {cfg.batch_tokens}) or decode.batch_size (now {cfg.decode.batch_size}); "
                   f"beams multiply it (decode.beam_size={cfg.decode.beam_size})")
    with out.writing(memory_hint=memory_hint, description="summarizing") as lines:
        for start in range(0, len(pending), cfg.sort_window):
            _summarize_window(summarizer, pending[start : start + cfg.sort_window], selection, cfg, lines)
    return out.finish()


def with_trained_layout(cfg: SummarizeConfig, trained: DataConfig | None) -> SummarizeConfig:
    """``cfg`` with the line-pair layout options it does not give (``document_separator``, ``paragraph_markers``:
    None) taken from ``trained`` (the checkpoint's data settings), when it reads a line pair's source file; else
    ``cfg``."""
    if trained is None or not reads_line_pairs(cfg.input, cfg.input_format):
        return cfg
    missing = [name for name, value in cfg.input_layout().items() if value is None]
    return replace(cfg, **{name: getattr(trained, name) for name in missing})


def _summarize_on_devices(cfg: SummarizeConfig, decode_given: Collection[str] | None) -> SummarizeResult:
    """``devices=N``: the shards in N processes, merged into the output (:mod:`hiersum.commands.shards`); each shard
    resolves ``decode_given`` against the checkpoint it loads anyway. A line pair's layout is resolved here first
    (:func:`with_trained_layout`), so the shards and the merge read the input alike."""
    if reads_line_pairs(cfg.input, cfg.input_format) and None in cfg.input_layout().values():
        cfg = with_trained_layout(cfg, _trained_data(cfg.checkpoint))
    merged = run_on_devices(cfg, functools.partial(summarize, decode_given=decode_given), "summarize")
    print(f"merged the {cfg.devices} shards ({merged} summaries) into {cfg.output}", file=sys.stderr)
    return SummarizeResult(written=merged, already_done=0, errors=0)


def _trained_data(checkpoint: str) -> DataConfig | None:
    """The data settings ``checkpoint`` records (its network read on the CPU; a file it cannot read raises the
    :class:`UsageError` that :func:`load_summarizer` would)."""
    return load_network(checkpoint).data_config


def _output_options(cfg: SummarizeConfig) -> dict[str, Any]:
    """The options that change a summary line (recorded in the output's provenance; a line pair's layout where
    set)."""
    names = ("input_format", "precision", *SELECTION_FIELDS, "attention", "attention_top_k")
    return {"decode": asdict(cfg.decode), **{name: getattr(cfg, name) for name in names},
            **cfg.input_layout(given_only=True)}


def _summarize_window(summarizer: Summarizer, examples: list[Example], selection: EncodingConfig,
                      cfg: SummarizeConfig, lines: LineWriter) -> None:
    """Decode one window of records in token-budget batches (:meth:`Summarizer.lines`) and write their summaries in
    input order as soon as every earlier one is done (synced after each batch)."""
    results: list[dict[str, Any] | None] = [None] * len(examples)
    next_index = 0  # first result of this window not yet written
    attention_top_k = cfg.attention_top_k if cfg.attention else 0
    for indices, records in summarizer.lines(examples, selection=selection, decode=cfg.decode,
                                             attention_top_k=attention_top_k):
        for index, record in zip(indices, records, strict=True):
            results[index] = record
        while next_index < len(results) and results[next_index] is not None:
            lines.write(results[next_index])
            next_index += 1
        lines.sync()
        lines.advance(len(indices))
