"""Hydra's ConfigStore: the schemas of :mod:`hiersum.config` registered under the names ``conf/`` extends.

A group's YAML files name ``<group>/schema`` in their defaults list, a primary config ``<config>_schema`` (the
``schema`` of its action in :data:`hiersum.cli.actions.ACTIONS`);
composition then checks every key, type and choice against the dataclass. The entry points
(:mod:`hiersum.cli.common`) register them once, before any composition.
"""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from hiersum.cli.actions import ACTIONS, load_object
from hiersum.config import (
    DataConfig,
    DecodeConfig,
    ModelConfig,
    OptimConfig,
    RankerModelConfig,
    TokenizerConfig,
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
    for action in ACTIONS.values():
        if action.config is not None and action.schema is not None:
            store.store(name=f"{action.config}_schema", node=load_object(action.schema))
    _registered.append(True)
