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
    ServeConfig,
    SummarizeConfig,
    TokenizerConfig,
)

LIGHTNING_CONFIGS = ("train", "ranker")
"""The primary configs whose schema holds :class:`~hiersum.config.TrainerConfig` (derived from Lightning's
``Trainer``, so importing it imports Lightning): the others are registered without it, and their ``--help``
answers at once."""
_registered: set[str] = set()


def register_configs(config_name: str | None = None) -> None:
    """Register the schemas so ``conf/<group>/*.yaml`` files and the primary configs are validated against them:
    those of the primary config ``config_name`` (``train``, ``summarize``...; None: every one). A schema is
    registered once; later calls do nothing for it."""
    store = ConfigStore.instance()
    if "common" not in _registered:
        store.store(group="model", name="schema", node=ModelConfig)
        store.store(group="tokenizer", name="schema", node=TokenizerConfig)
        store.store(group="data", name="schema", node=DataConfig)
        store.store(group="optim", name="schema", node=OptimConfig)
        store.store(group="decode", name="schema", node=DecodeConfig)
        store.store(group="ranker_model", name="schema", node=RankerModelConfig)
        store.store(name="evaluate_schema", node=EvaluateConfig)
        store.store(name="summarize_schema", node=SummarizeConfig)
        store.store(name="serve_schema", node=ServeConfig)
        store.store(name="prepare_schema", node=PrepareConfig)
        store.store(name="export_schema", node=ExportConfig)
        store.store(name="rank_schema", node=RankConfig)
        store.store(name="evaluate_selection_schema", node=EvaluateSelectionConfig)
        _registered.add("common")
    if "trainer" not in _registered and (config_name is None or config_name in LIGHTNING_CONFIGS):
        from hiersum.config import RankerTrainConfig, TrainConfig, TrainerConfig  # imports Lightning

        store.store(group="trainer", name="schema", node=TrainerConfig)
        store.store(name="train_schema", node=TrainConfig)
        store.store(name="ranker_schema", node=RankerTrainConfig)
        _registered.add("trainer")
