"""The config of ``hiersum rank``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hiersum.config.checks import MISSING, at_least_one
from hiersum.config.data import check_line_layout
from hiersum.config.input_output import InputOutputConfig


@dataclass
class RankConfig(InputOutputConfig):
    """``conf/rank.yaml`` (``hiersum rank``): raw multi-document input -> ranked native JSONL; the input and output
    options are :class:`InputOutputConfig`'s, as ``hiersum summarize``'s."""

    task_name: str = MISSING
    ranker: str = MISSING
    """A ranker checkpoint (``hiersum train-ranker``), or ``tfidf``."""
    top_k: int = MISSING
    """L: paragraphs kept per record, in rank order."""
    batch_examples: int = MISSING
    paths: dict[str, Any] = MISSING

    def __post_init__(self) -> None:
        at_least_one(self, "top_k", "batch_examples", "devices")
        check_line_layout(self, "")
