"""The one summarizer: :func:`load_summarizer` loads a checkpoint on a device (every failure a one-line
:class:`~hiersum.errors.UsageError`) as a :class:`Summarizer`, which ``hiersum summarize``, ``hiersum serve`` and a
Python call all decode with, as litgpt's ``LLM.load`` is what its server and its users call. Its
:meth:`Summarizer.lines` is the one sequence from records to output lines: paragraph selection -> encoding ->
decoding in token-budget batches -> the line of each record (:mod:`hiersum.inference.summary_lines`).

From Python, :meth:`Summarizer.summarize` gives, as Hugging Face's ``pipeline("summarization")``, the lines
``hiersum summarize`` writes for the same records and options, one dict per input, in input order::

    from hiersum.inference import load_summarizer

    summarizer = load_summarizer("outputs/train/RUN/checkpoints/last.ckpt")
    [line] = summarizer.summarize("Ada Lovelace was born in London.\\n\\nShe wrote the first program.", beam_size=2)
    line["summary"], line["score"]
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

import hiersum.checkpoints.ranker  # noqa: F401  (registers SCORERS["ranker"]: a checkpoint's selection=ranker)
from hiersum.checkpoints.contents import checkpoint_tokenizer, effective_decode_config
from hiersum.checkpoints.io import TrainedNetwork, load_network
from hiersum.config import SELECTION_FIELDS, DataConfig, DecodeConfig, SelectionOverrides
from hiersum.data.paragraphs import paragraphed
from hiersum.data.schema import Example
from hiersum.data.selection import EncodingConfig, encode_paragraphed, encoding_config
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.errors import UsageError
from hiersum.inference.batched import summarize_encoded
from hiersum.inference.precision import decoding_precision
from hiersum.inference.summary_lines import attended_paragraphs, example_of, summary_line
from hiersum.model.encoder_registry import encoder_spec
from hiersum.model.summarizer import HierSum

INPUT_SOURCE = "input"
"""The file name of a record given in Python: its default id is ``input-<position>`` (1-based)."""

Input = str | Sequence[str] | dict[str, Any]
"""One input of :meth:`Summarizer.summarize`: a plain text (one document, paragraphs separated by blank
lines), a list of documents (strings, each its paragraphs separated by blank lines), or a record in the native
JSONL shape (``{"id", "title", "documents"}``, or ``{"id", "text"}``)."""


def checked_device(device: str, precision: str = "32") -> str:
    """The kind (``cpu`` / ``cuda``) of ``device``; a malformed device, an absent CUDA, a precision that is none of
    Lightning's (:data:`hiersum.inference.precision.PRECISIONS`) or one the device cannot run (float16 on a CPU) is
    a :class:`UsageError`."""
    try:
        decoding = decoding_precision(precision)
    except ValueError as error:
        raise UsageError(str(error)) from None
    try:
        kind = torch.device(device).type
    except RuntimeError:
        raise UsageError(f"device must be cpu or cuda[:N]; found {device!r}") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise UsageError("device=cuda asked for, but no CUDA device is available")
    if kind == "cpu" and decoding.computes is torch.float16:
        raise UsageError(f"precision={precision} needs device=cuda (on cpu use precision=bf16)")
    return kind


@dataclass(frozen=True)
class Summarizer:
    """A checkpoint's network loaded to summarize on a device in a precision: what ``hiersum summarize``,
    ``hiersum serve`` and the Python call decode with. Made by :func:`load_summarizer`, which moves the network to
    ``device`` and converts its weights to ``precision``'s dtype once; a summarizer decodes only in that precision
    (another one with the same network, ``dataclasses.replace(summarizer, precision=...)``, is refused at its first
    decode: load the checkpoint again in the other precision)."""

    network: TrainedNetwork
    """The network and what its checkpoint carries (tokenizer, data and search settings)."""
    checkpoint: str
    """The file or model directory it was loaded from (named in errors)."""
    device: str = "cpu"
    """Where it decodes: ``cpu``, ``cuda``, ``cuda:N``."""
    precision: str = "32"
    """One of Lightning's precisions (:data:`hiersum.inference.precision.PRECISIONS`): ``32``, ``bf16`` / ``16``
    (autocast; ``16`` needs cuda), ``bf16-true`` (the weights in bfloat16), ..."""
    batch_tokens: int = 8192
    """Token budget of a decoding batch (examples x paragraphs x tokens)."""

    @property
    def model(self) -> HierSum:
        """The network (:class:`hiersum.model.HierSum`), in eval mode."""
        return self.network.model

    @property
    def tokenizer(self) -> SubwordTokenizer:
        """The checkpoint's tokenizer, parsed once (:func:`load_summarizer` parses it)."""
        return self.network.tokenizer

    @property
    def data_config(self) -> DataConfig | None:
        """The data settings it was trained with (its paragraph selection), when recorded."""
        return self.network.data_config

    @property
    def decode_config(self) -> DecodeConfig | None:
        """The search settings of its training run, when recorded (:meth:`decoding`)."""
        return self.network.decode_config

    @property
    def inter_paragraph(self) -> bool:
        """Whether its encoder attends across paragraphs (what ``attention_top_k`` reads)."""
        return encoder_spec(self.network.model_config.encoder).inter_paragraph

    def selection(self, overrides: SelectionOverrides) -> EncodingConfig:
        """The checkpoint's paragraph selection (as for evaluation), with the fields ``overrides`` sets (those of
        :class:`hiersum.config.ParagraphSelection`: ``max_paragraphs``, ``paragraphs``, ``selection``...; None
        keeps the checkpoint's); an invalid one is a :class:`UsageError`."""
        data = self.data_config or DataConfig(path="")
        given = overrides.given()
        if "max_paragraphs" in given:
            given["eval_max_paragraphs"] = None  # the command line wins over the checkpoint's evaluation setting
        try:
            model = self.network.model_config
            return encoding_config(replace(data, **given), graph=model.graph, copy_oov=model.copy_oov, evaluation=True)
        except ValueError as error:
            raise UsageError(str(error)) from None

    def decoding(self, given: DecodeConfig, names: Collection[str] | None) -> DecodeConfig:
        """The search settings of its training run, but for the fields ``names`` (those the command line or the
        call gave) taken from ``given``; ``given`` whole when ``names`` is None or the checkpoint records none
        (:func:`hiersum.checkpoints.contents.effective_decode_config`)."""
        return given.check_lengths() if names is None else effective_decode_config(self.decode_config, given, names)

    def lines(self, examples: Sequence[Example], *, selection: EncodingConfig, decode: DecodeConfig,
              attention_top_k: int = 0, paragraphs: bool = False, deadlines: Sequence[float | None] | None = None,
              ) -> Iterator[tuple[list[int], list[dict[str, Any] | None]]]:
        """The output line of each example (:func:`hiersum.inference.summary_lines.summary_line`): its paragraphs
        selected by ``selection``, encoded, decoded with ``decode`` in token-budget batches; yields (indices into
        ``examples``, their lines: None for an example past its deadline) batch by batch. What ``hiersum summarize``
        writes, ``hiersum serve`` answers and :meth:`summarize` returns. Under ``selection.text_normalization=ptb`` the
        text is PTB-tokenized before the model reads it and each summary detokenized for reading
        (:mod:`hiersum.data.normalization`).

        ``attention_top_k``: the most attended paragraphs added to each line (``top_paragraphs``; 0 adds none);
        ``paragraphs``: each line also gets them with their text (``paragraphs``, :func:`attended_paragraphs`);
        ``deadlines``: per example, a ``time.monotonic()`` past which its decoding stops and it has no line
        (``hiersum serve``'s timeout)."""
        examples = paragraphed(examples, self.tokenizer, selection)  # once: what is encoded and what lines quote
        encoded = encode_paragraphed(examples, self.tokenizer, selection)
        for indices, summaries in summarize_encoded(
            self.model, encoded, self.tokenizer, decode, batch_tokens=self.batch_tokens, device=self.device,
            precision=self.precision, attention_top_k=attention_top_k, deadlines=deadlines,
        ):
            lines = [None if summary is None else summary_line(summary, encoded[index], n_best=decode.n_best > 1,
                                                               normalization=selection.text_normalization)
                     for index, summary in zip(indices, summaries, strict=True)]
            if paragraphs:
                lines = [None if line is None else {**line, "paragraphs": attended_paragraphs(line, examples[index])}
                         for index, line in zip(indices, lines, strict=True)]
            yield indices, lines

    def summarize(self, inputs: Input | Sequence[Input], *, attention_top_k: int = 0,
                  **options: Any) -> list[dict[str, Any]]:
        """The summary of each input (one input, or a list of them: see :data:`Input`), in input order: the
        line ``hiersum summarize`` writes for it (``id``, ``summary``, ``score``, ``n_paragraphs_kept``,
        ``n_paragraphs_dropped``; ``n_best`` when ``n_best`` > 1) and, with ``attention_top_k`` > 0 (models with
        inter-paragraph attention), its most attended paragraphs, as ``top_paragraphs`` and with their text as
        ``paragraphs`` (what ``hiersum serve`` answers).

        ``options``: the fields of :class:`hiersum.config.ParagraphSelection` (``max_paragraphs``,
        ``max_paragraph_tokens``, ``paragraphs``, ``selection``, ``ranker``, ``title_paragraph``: the paragraph
        selection; those not given are the checkpoint's), and the fields of :class:`hiersum.config.DecodeConfig`
        (``beam_size``, ``alpha``, ``min_length``, ``max_length``, ``n_best``, ``greedy``, ...; the others are the
        search settings the checkpoint's training run recorded, or the command line's defaults where it recorded
        none). A malformed
        input raises :class:`hiersum.data.schema.RecordError` (a ``ValueError``) naming its position and field, an
        unknown option a ``TypeError``, a value out of range a ``ValueError``."""
        examples = [_example(item, position) for position, item in enumerate(_as_list(inputs), start=1)]
        selection = SelectionOverrides(**{name: options.pop(name) for name in SELECTION_FIELDS if name in options})
        decode = self.decoding(DecodeConfig(**options), options)
        lines: list[dict[str, Any]] = [{} for _ in examples]
        for indices, records in self.lines(examples, selection=self.selection(selection), decode=decode,
                                           attention_top_k=attention_top_k, paragraphs=bool(attention_top_k)):
            for index, record in zip(indices, records, strict=True):
                lines[index] = record or {}
        return lines


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
                    compile: bool = False) -> Summarizer:
    """The hiersum checkpoint (``.ckpt``) or model directory (``hiersum export``) at ``path``, ready to
    summarize on ``device`` in ``precision`` (:class:`Summarizer`); its network loaded by
    :func:`hiersum.checkpoints.load_network` (``weights_only=True``, no Lightning), moved to ``device`` and its
    weights converted to ``precision``'s dtype (:data:`hiersum.inference.precision.PRECISIONS`), and its tokenizer
    parsed. Any failure is one :class:`UsageError` line (a missing, unreadable or mismatched file, no tokenizer, a
    device this machine lacks, an unknown precision). With ``compile``, the model's repeated blocks are compiled in
    place (:meth:`hiersum.model.HierSum.compile`)."""
    checked_device(device, precision)
    network = load_network(path)
    network.model.eval().to(device, dtype=decoding_precision(precision).weights)
    if compile:
        network.model.compile()
    checkpoint_tokenizer(network, path)  # parsed now, once: a checkpoint without a tokenizer is refused at load
    return Summarizer(network, checkpoint=str(path), device=device, precision=str(precision),
                      batch_tokens=batch_tokens)
