"""The config of ``hiersum prepare``: the data, tokenizer and model groups of ``hiersum train``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hiersum.config.checks import MISSING
from hiersum.config.data import DataConfig, TokenizerConfig
from hiersum.config.model import ModelConfig


@dataclass
class PrepareConfig:
    """``conf/prepare.yaml`` (``hiersum prepare``): its top-level keys, whose values the YAML gives, and its
    groups (those of ``hiersum train``: the same data, tokenizer and model give the same prepared corpus)."""

    task_name: str = MISSING
    """The run directory's task folder (``outputs/<task_name>/...``); ``prepare``."""
    splits: list[str] = MISSING
    """The splits to prepare (train, validation, test)."""
    model: ModelConfig = MISSING
    """The model whose source layout (grid or flat) and pretrained tokenizer the prepared corpus is for."""
    tokenizer: TokenizerConfig = MISSING
    """The subword tokenizer, loaded or trained on the train split (and cached with the prepared corpus)."""
    data: DataConfig = MISSING
    """The corpus and how an example becomes a [P, T] grid."""
    paths: dict[str, Any] = MISSING
    """``output_dir`` (the run directory, where ``data_errors.jsonl`` goes) and the project's folders."""
