"""The input and output files of a command that reads input records and writes one output line each, exactly once,
resumable and shardable: ``hiersum summarize`` and ``hiersum rank`` (:class:`InputOutputConfig`, the base of both
configs, so their keys stay flat: ``input=``, ``output=``, ``shard=0/3``).
:class:`hiersum.inference.resumable_output.ResumableOutput` runs what these options ask for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hiersum.config.checks import MISSING


@dataclass
class InputOutputConfig:
    """Where the records come from and go to, and how a run shares or resumes the output."""

    input: str = MISSING
    """A file of input records, or ``-`` (stdin)."""
    input_format: str = MISSING
    """``auto`` or a registered input format (``hiersum.data.formats.input_formats``; a string: the registry
    holds the choices)."""
    document_separator: str | None = MISSING
    """``input_format=line_pairs`` (a source file of the line-pair layout, ``val.source``): the text between the
    documents of a line, as ``data.document_separator``; None: a summarizer checkpoint's ``data.document_separator``
    (``hiersum summarize``), else a line is one document."""
    paragraph_markers: list[str] | None = MISSING
    """``input_format=line_pairs``: the texts at which a document is cut into paragraphs, as
    ``data.paragraph_markers``; None: a summarizer checkpoint's (``hiersum summarize``), else none."""
    output: str = MISSING
    """The JSONL written a line per record, or ``-`` (stdout)."""
    resume: bool = MISSING
    """Go on from the records already in ``output`` (each id exactly once)."""
    overwrite: bool = MISSING
    """Start the output afresh even when it holds another run's lines (``resume`` is then ignored)."""
    strict: bool = MISSING
    """An input without any record is an error (exit 2) instead of a warning."""
    device: str = MISSING
    """Where the model runs: ``cpu`` or ``cuda[:N]``."""
    devices: int = MISSING
    """Processes that handle the input's shards (one per GPU, or sharing the CPU), merged in input order."""
    shard: str | None = MISSING
    """``I/N``: only shard I of N, into ``<output stem>.shard-I-of-N.jsonl`` (a cluster's array job)."""

    def input_layout(self, *, given_only: bool = False) -> dict[str, Any]:
        """The line-pair layout options (None: not given), for :func:`hiersum.data.formats.read_records`'s
        ``layout``; ``given_only``: those given, for the output's provenance (which then stays as it was for the
        other inputs)."""
        markers = self.paragraph_markers
        layout = {"document_separator": self.document_separator,
                  "paragraph_markers": None if markers is None else list(markers)}
        return {name: value for name, value in layout.items() if value is not None or not given_only}
