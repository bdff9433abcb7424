"""The options that turn a record into its output line, shared by ``hiersum summarize`` and ``hiersum serve``
(:class:`RecordConfig`): modelled once, as the base of both configs, so their keys stay flat (``max_paragraphs=3``,
``decode.beam_size=2``, as ``conf/summarize.yaml`` and ``conf/serve.yaml`` give them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hiersum.config.checks import at_least_one
from hiersum.config.choices import Precision, Selection
from hiersum.config.decode import DecodeConfig


@dataclass
class RecordConfig:
    """Paragraph selection, decoding and their batches: what decides a record's output line besides the model."""

    precision: Precision = Precision("32")  # type: ignore[valid-type]
    """``32``, ``bf16`` / ``16`` (autocast; ``16`` needs cuda) or ``bf16-true`` (the weights in bfloat16)."""
    batch_tokens: int = 8192
    """Token budget of a decoding batch (examples x paragraphs x tokens)."""
    max_paragraphs: int | None = None
    """Paragraphs kept per record (None: the checkpoint's data setting)."""
    max_paragraph_tokens: int | None = None
    """Tokens kept per paragraph (None: the checkpoint's)."""
    selection: Selection | None = None  # type: ignore[valid-type]
    """The order paragraphs are kept in (None: the checkpoint's)."""
    ranker: str | None = None
    """The ranker checkpoint of ``selection=ranker`` (``hiersum train-ranker``; None: the checkpoint's)."""
    attention_top_k: int = 3
    """Most attended paragraphs added to a line when attention is asked for (models with inter-paragraph
    attention)."""
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    """The search settings (``decode.*``)."""

    def __post_init__(self) -> None:
        self.precision = Precision.coerce(self.precision, "precision")
        if self.selection is not None:
            self.selection = Selection.coerce(self.selection, "selection")
        at_least_one(self, "batch_tokens", "attention_top_k")
