"""Hydra's ConfigStore: the schemas of :mod:`hiersum.config` registered under the names ``conf/`` extends.

A group's YAML files name ``<group>/schema`` in their defaults list, a primary config ``<action>_schema``;
composition then checks every key, type and choice against the dataclass. The entry points
(:mod:`hiersum.cli.common`) register them once, before any composition.
"""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from hiersum.config import (
    DataConfig,
    DecodeConfig,
    EvaluateConfig,
    EvaluateSelectionConfig,
    ExportConfig,
    ModelConfig,
    OptimConfig,
    PrepareConfig,
    RankConfig,
    RankerModelConfig,
    RankerTrainConfig,
    ServeConfig,
    SummarizeConfig,
    TokenizerConfig,
    TrainConfig,
    TrainerConfig,
)

_registered: list[bool] = []


def register_configs() -> None:
    """Register the schemas so ``conf/<group>/*.yaml`` files and the primary configs are validated against them;
    the first call registers, later ones do nothing."""
    if _registered:
        return
    store = ConfigStore.instance()
    store.store(group="model", name="schema", node=ModelConfig)
    store.store(group="tokenizer", name="schema", node=TokenizerConfig)
    store.store(group="data", name="schema", node=DataConfig)
    store.store(group="optim", name="schema", node=OptimConfig)
    store.store(group="decode", name="schema", node=DecodeConfig)
    store.store(group="trainer", name="schema", node=TrainerConfig)
    store.store(group="ranker_model", name="schema", node=RankerModelConfig)
    store.store(name="train_schema", node=TrainConfig)
    store.store(name="evaluate_schema", node=EvaluateConfig)
    store.store(name="summarize_schema", node=SummarizeConfig)
    store.store(name="serve_schema", node=ServeConfig)
    store.store(name="prepare_schema", node=PrepareConfig)
    store.store(name="export_schema", node=ExportConfig)
    store.store(name="train_ranker_schema", node=RankerTrainConfig)
    store.store(name="rank_schema", node=RankConfig)
    store.store(name="evaluate_selection_schema", node=EvaluateSelectionConfig)
    _registered.append(True)
