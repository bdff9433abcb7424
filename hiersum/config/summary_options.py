"""The options that turn a record into its summary line, shared by ``hiersum summarize`` and ``hiersum serve``
(:class:`SummaryOptions`): modelled once, as the base of both configs, so their keys stay flat (``max_paragraphs=3``,
``paragraphs=sentences``, ``decode.beam_size=2``, as ``conf/summarize.yaml`` and ``conf/serve.yaml`` give them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hiersum.config.checks import at_least_one
from hiersum.config.choices import Precision
from hiersum.config.decode import DecodeConfig
from hiersum.config.selection import SelectionOverrides


@dataclass
class SummaryOptions(SelectionOverrides):
    """Paragraph selection (each field of :class:`~hiersum.config.selection.ParagraphSelection`, None: the
    checkpoint's), precision, decoding and their batches: what decides a record's summary line besides the model."""

    precision: Precision = Precision("32")
    """The decoding precision (:data:`hiersum.config.Precision`, Lightning's names; an alias read as the precision it
    is): ``32``, ``bf16`` / ``16`` (autocast; ``16`` needs cuda) or ``bf16-true`` (the weights in bfloat16, converted
    once when loaded), ...: :data:`hiersum.inference.precision.PRECISIONS`."""
    batch_tokens: int = 8192
    """Token budget of a decoding batch (examples x paragraphs x tokens)."""
    attention_top_k: int = 3
    """Most attended paragraphs added to a line when attention is asked for (models with inter-paragraph
    attention)."""
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    """The search settings (``decode.*``)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.precision = Precision.coerce(self.precision, "precision")
        at_least_one(self, "batch_tokens", "attention_top_k")
