"""The config of ``hiersum train-ranker``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hiersum.config.checks import MISSING, at_least_one
from hiersum.config.data import DataConfig, TokenizerConfig
from hiersum.config.ranker_model import RankerModelConfig
from hiersum.config.trainer import TrainerConfig


@dataclass
class RankerTrainConfig:
    """``conf/train_ranker.yaml`` (``hiersum train-ranker``): its top-level keys and groups."""

    task_name: str = MISSING
    """The run directory's task folder (``outputs/<task_name>/...``); ``train_ranker``."""
    seed: int = MISSING
    """Seed of every random generator (``pytorch_lightning.seed_everything``)."""
    optimizer: dict[str, Any] = MISSING
    """A partial optimizer (``_partial_: true``), called with the ranker's parameters."""
    batch_examples: int = MISSING
    """Examples per batch (every paragraph of each); >= 1."""
    max_train_paragraphs: int | None = MISSING
    """Paragraphs of a training example the ranker reads (document order; None: all)."""
    top_k: int = MISSING
    """Validation: the summed ROUGE-2 recall labels of the ranker's top-k paragraphs (``val_top_k_recall``); >= 1.
    Also the L' at which the trained ranker is compared with document order (a warning when below it)."""
    report_budgets: list[int] = field(default_factory=lambda: [5, 8, 10, 20, 40])
    """L' of the recall table written at the end of the run (the trained ranker against ``first`` and ``tfidf``
    on the validation split, ``<run>/selection.md``); ``top_k`` is always one of them. Each >= 1."""
    ranker_model: RankerModelConfig = MISSING
    """The ranker's sizes and features (``ranker_model=features|paper|tiny``)."""
    tokenizer: TokenizerConfig = MISSING
    """The subword tokenizer, loaded or trained on the train split."""
    data: DataConfig = MISSING
    """The corpus (its train and validation splits)."""
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    """``pytorch_lightning.Trainer``'s arguments (every one typed, as ``hiersum train``'s), with its ``_target_``."""
    paths: dict[str, Any] = MISSING
    """``output_dir`` (the run directory: ``checkpoints/ranker-best.pt``) and the project's folders."""

    def __post_init__(self) -> None:
        at_least_one(self, "batch_examples", "top_k")
        if not self.report_budgets or min(self.report_budgets) < 1:
            raise ValueError(f"report_budgets: expected a non-empty list of L' >= 1, found {list(self.report_budgets)}")
