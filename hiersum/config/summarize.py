"""The configs of ``hiersum summarize`` and ``hiersum export``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hiersum.config.checks import MISSING, at_least_one
from hiersum.config.data import check_line_layout
from hiersum.config.input_output import InputOutputConfig
from hiersum.config.summary_options import SummaryOptions


@dataclass
class SummarizeConfig(InputOutputConfig, SummaryOptions):
    """``conf/summarize.yaml`` (``hiersum summarize``): its top-level keys, whose values the YAML gives; those it
    shares with ``hiersum serve`` (paragraph selection, ``precision``, ``batch_tokens``, ``attention_top_k``,
    ``decode``) are :class:`SummaryOptions`'s, those it shares with ``hiersum rank`` (``input``, ``output``,
    ``resume``, ``shard``...) :class:`InputOutputConfig`'s."""

    task_name: str = MISSING
    checkpoint: str = MISSING
    sort_window: int = MISSING
    attention: bool = MISSING
    """Add each line's ``attention_top_k`` most attended paragraphs (``top_paragraphs``)."""
    compile: bool = False
    """Compile the model's repeated blocks in place (:meth:`hiersum.model.HierSum.compile`). Off by default: on
    a CPU it gains nothing (docs/benchmarks.md, "Compiling") and its first steps cost compile time."""
    paths: dict[str, Any] = MISSING

    def __post_init__(self) -> None:
        super().__post_init__()
        at_least_one(self, "sort_window", "devices")
        check_line_layout(self, "")


@dataclass
class ExportConfig:
    """``conf/export.yaml`` (``hiersum export``): a checkpoint written as a model directory (safetensors, JSON)."""

    task_name: str = MISSING
    """The run directory's task folder (``outputs/<task_name>/...``); ``export``."""
    checkpoint: str = MISSING
    """A hiersum checkpoint (``.ckpt``), or a run directory of ``hiersum train`` (its best checkpoint, as its
    ``metrics.json`` names it, else ``checkpoints/last.ckpt``)."""
    output: str = MISSING
    """The model directory to write (``model.safetensors``, ``config.json``, ``tokenizer.json``,
    ``generation_config.json``, ``README.md``); written whole into a temporary folder beside it, then renamed."""
    overwrite: bool = MISSING
    """Replace an existing non-empty ``output`` directory (false: refuse it)."""
    paths: dict[str, Any] = MISSING
    """The project's folders (``conf/paths/default.yaml``)."""

    def __post_init__(self) -> None:
        if not self.output.strip() or self.output.strip() == "-":
            raise ValueError(f"output must name a directory to write, found {self.output!r}")
