"""One call from Python: ``load_summarizer(path).summarize(inputs, **decode_options)``, as Hugging Face's
``pipeline("summarization")`` gives its users; and loading a checkpoint on a device, every failure a one-line
:class:`~hiersum.errors.UsageError` (what ``hiersum summarize``, ``evaluate``, ``export`` and ``serve`` load
through).

The summaries are the lines ``hiersum summarize`` writes for the same records and options
(:mod:`hiersum.inference.records`), one dict per input, in input order::

    from hiersum.inference import load_summarizer

    summarizer = load_summarizer("outputs/train/RUN/checkpoints/last.ckpt")
    [line] = summarizer.summarize("Ada Lovelace was born in London.\\n\\nShe wrote the first program.", beam_size=2)
    line["summary"], line["score"]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch

import hiersum.checkpoints.ranker  # noqa: F401  (registers SCORERS["ranker"]: a checkpoint's selection=ranker)
from hiersum.checkpoints.contents import checkpoint_tokenizer, effective_decode_config
from hiersum.checkpoints.io import TrainedNetwork, load_network
from hiersum.config import DecodeConfig, RecordConfig
from hiersum.data.schema import Example
from hiersum.data.selection import encode_examples, paragraphed
from hiersum.errors import UsageError
from hiersum.inference.batched import PRECISIONS
from hiersum.inference.records import attended_paragraphs, example_of, output_records, record_selection

INPUT_SOURCE = "input"
"""The file name of a record given in Python: its default id is ``input-<position>`` (1-based)."""

Input = str | Sequence[str] | dict[str, Any]
"""One input of :meth:`TextSummarizer.summarize`: a plain text (one document, paragraphs separated by blank
lines), a list of documents (strings, each its paragraphs separated by blank lines), or a record in the native
JSONL shape (``{"id", "title", "documents"}``, or ``{"id", "text"}``)."""


def checked_device(device: str, precision: str = "32") -> str:
    """The kind (``cpu`` / ``cuda``) of ``device``; a malformed device, an absent CUDA or a precision the
    device cannot run is a :class:`UsageError`."""
    if precision not in PRECISIONS:
        raise UsageError(f"precision must be one of {', '.join(PRECISIONS)}; found {precision!r}")
    try:
        kind = torch.device(device).type
    except RuntimeError:
        raise UsageError(f"device must be cpu or cuda[:N]; found {device!r}") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise UsageError("device=cuda asked for, but no CUDA device is available")
    if kind == "cpu" and precision == "16":
        raise UsageError("precision=16 needs device=cuda (on cpu use precision=bf16)")
    return kind


def load_checkpoint(checkpoint: str | Path, *, compile: bool = False) -> TrainedNetwork:
    """:func:`hiersum.checkpoints.load_network`: a missing, unreadable or mismatched checkpoint raises its
    :class:`~hiersum.checkpoints.io.CheckpointError`, a :class:`UsageError` (one line, exit status 2). With
    ``compile``, the model's repeated blocks are compiled in place (:meth:`hiersum.model.HierSum.compile`)."""
    summarizer = load_network(checkpoint)
    if compile:
        summarizer.model.compile()
    return summarizer


@dataclass
class TextSummarizer(TrainedNetwork):
    """A checkpoint's network (every attribute of :class:`hiersum.checkpoints.TrainedNetwork`: ``model``,
    ``data_config``, ``tokenizer``) that summarizes text in one call (:meth:`summarize`)."""

    checkpoint: str = ""
    """The file or model directory it was loaded from (named in errors)."""
    device: str = "cpu"
    """Where it decodes: ``cpu``, ``cuda``, ``cuda:N``."""
    precision: str = "32"
    """``32``, ``bf16``, ``16`` (autocast; cuda) or ``bf16-true`` (the weights in bfloat16)."""
    batch_tokens: int = 8192
    """Token budget of a decoding batch (examples x paragraphs x tokens)."""

    def summarize(self, inputs: Input | Sequence[Input], *, max_paragraphs: int | None = None,
                  max_paragraph_tokens: int | None = None, selection: str | None = None,
                  attention_top_k: int = 0, **decode_options: Any) -> list[dict[str, Any]]:
        """The summary of each input (one input, or a list of them: see :data:`Input`), in input order: the
        line ``hiersum summarize`` writes for it (``id``, ``summary``, ``score``, ``n_paragraphs_kept``,
        ``n_paragraphs_dropped``; ``n_best`` when ``n_best`` > 1) and, with ``attention_top_k`` > 0 (models with
        inter-paragraph attention), its most attended paragraphs, as ``top_paragraphs`` and with their text as
        ``paragraphs`` (what ``hiersum serve`` answers).

        ``max_paragraphs``, ``max_paragraph_tokens``, ``selection``: the paragraph selection (None: the
        checkpoint's); ``decode_options``: the fields of :class:`hiersum.config.DecodeConfig` (``beam_size``,
        ``alpha``, ``min_length``, ``max_length``, ``n_best``, ``greedy``, ...; the others are the search settings
        the checkpoint's training run recorded, or the command line's defaults where it recorded none). A malformed
        input raises :class:`hiersum.data.schema.RecordError` (a ``ValueError``) naming its position and field, an
        unknown option a ``TypeError``, a value out of range a ``ValueError``."""
        examples = [self._example(item, position) for position, item in enumerate(_as_list(inputs), start=1)]
        config = RecordConfig(precision=self.precision, batch_tokens=self.batch_tokens, max_paragraphs=max_paragraphs,
                              max_paragraph_tokens=max_paragraph_tokens, selection=selection,
                              decode=effective_decode_config(self.decode_config, DecodeConfig(**decode_options),
                                                             decode_options))
        tokenizer = self.tokenizer
        selection = record_selection(config, self)
        encoded = encode_examples(examples, tokenizer, selection)
        lines: list[dict[str, Any]] = [{} for _ in examples]
        for indices, records in output_records(self, encoded, tokenizer, config, device=self.device,
                                               attention_top_k=attention_top_k):
            for index, record in zip(indices, records, strict=True):
                lines[index] = record or {}
        if attention_top_k:  # the paragraphs as the paragraph rule made them, which the provenance indexes
            lines = [{**line, "paragraphs": attended_paragraphs(line, example)}
                     for line, example in zip(lines, paragraphed(examples, tokenizer, selection), strict=True)]
        return lines

    @staticmethod
    def _example(item: Input, position: int) -> Example:
        if isinstance(item, str):
            item = {"text": item}
        elif not isinstance(item, dict):
            item = {"documents": list(item)}
        return example_of(item, source=INPUT_SOURCE, line=position)


def _as_list(inputs: Input | Sequence[Input]) -> list[Input]:
    """One input (a text, a record) as a list of one; a list of inputs as it is. A list of strings is a list
    of texts (give a list of documents inside a list: ``[["doc 1", "doc 2"]]``)."""
    if isinstance(inputs, (str, dict)):
        return [inputs]
    return list(inputs)


def load_summarizer(path: str | Path, *, device: str = "cpu", precision: str = "32", batch_tokens: int = 8192,
                    compile: bool = False) -> TextSummarizer:
    """The hiersum checkpoint (``.ckpt``) or model directory (``hiersum export``) at ``path``, ready to
    summarize on ``device`` in ``precision`` (:class:`TextSummarizer`); loaded as
    :func:`hiersum.checkpoints.load_network` loads it (``weights_only=True``, no Lightning). Any failure is one
    :class:`UsageError` line (a missing file, no tokenizer, a device this machine lacks)."""
    checked_device(device, precision)
    loaded = load_checkpoint(path, compile=compile)
    summarizer = TextSummarizer(**{field.name: getattr(loaded, field.name) for field in fields(TrainedNetwork)},
                                checkpoint=str(path), device=device, precision=precision, batch_tokens=batch_tokens)
    checkpoint_tokenizer(summarizer, path)  # parsed now, once: a checkpoint without a tokenizer is refused at load
    return summarizer
