"""Typed configuration schemas, one module per subject; Hydra's ConfigStore registers them (``hiersum.cli``).

Every YAML file under ``conf/`` is validated against one of these dataclasses at composition time, so a
misspelt key, a wrong type or a value outside a fixed set of choices (an :class:`enum.Enum` field) fails before
training starts. The primary configs (``train.yaml``, ``evaluate.yaml``, ``summarize.yaml``...) extend
:class:`TrainConfig`, :class:`EvaluateConfig`, :class:`SummarizeConfig`...; the files of a group
(``conf/<group>/*.yaml``) extend ``<group>/schema``
(:func:`hiersum.cli.config_store.register_configs`).

The defaults of a group's dataclass are those of the group's default preset (e.g. ``ModelConfig`` =
``conf/model/small.yaml``), so a preset holds only what differs from its parent. Each dataclass checks its own
invariants in ``__post_init__``. Fixed choices are :class:`ConfigEnum` members, which are strings
(``config.graph == "none"``); :func:`config_dict` turns a config into plain values (what checkpoints store).

The modules import no Hydra, OmegaConf or Lightning (:mod:`hiersum.config.trainer` reads the Trainer's signature
from Lightning's source). This package imports its modules when a name is first asked for, so that
``from hiersum.config.decode import DecodeConfig`` loads none of the other schemas.

=================  =====================================================================
module             schemas
=================  =====================================================================
``choices``        :class:`ConfigEnum` and the fixed choices (``Graph``, ``Selection``...)
``checks``         ``MISSING``, :func:`config_dict`, the value checks
``model``          :class:`ModelConfig`
``data``           :class:`TokenizerConfig`, :class:`DataConfig`
``optim``          :class:`OptimConfig`, :class:`ParameterGroupConfig`
``decode``         :class:`DecodeConfig`
``records``        :class:`RecordConfig` (what summarize and serve share)
``record_output``  :class:`RecordOutputConfig` (what summarize and rank share)
``trainer``        :class:`TrainerConfig` (derived from ``pytorch_lightning.Trainer``)
``train``          :class:`TrainConfig`
``prepare``        :class:`PrepareConfig`
``evaluate``       :class:`EvaluateConfig`, :class:`EvaluateSelectionConfig`, :class:`BootstrapConfig`
``summarize``      :class:`SummarizeConfig`, :class:`ExportConfig`
``serve``          :class:`ServeConfig`, :class:`ServeLimits`
``ranker``         :class:`RankerModelConfig`, :class:`RankConfig`
``train_ranker``   :class:`RankerTrainConfig`
=================  =====================================================================

The run's exceptions and exit statuses (``UsageError``, ``RunStopped``...) live in :mod:`hiersum.errors`.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "hiersum.config.choices": ("ConfigEnum", "Graph", "Selection", "Paragraphs", "OnError", "Stopping", "Precision",
                               "Baseline", "ServeHost", "ServeAccelerator", "LogLevel", "RankerFeature",
                               "SelectionStrategy"),
    "hiersum.config.checks": ("MISSING", "config_dict"),
    "hiersum.config.model": ("ModelConfig",),
    "hiersum.config.data": ("TokenizerConfig", "DataConfig"),
    "hiersum.config.optim": ("NOAM_SCHEDULER", "ParameterGroupConfig", "OptimConfig"),
    "hiersum.config.decode": ("DecodeConfig",),
    "hiersum.config.records": ("RecordConfig",),
    "hiersum.config.trainer": ("TRAINER_ACCELERATORS", "TRAINER_PRECISIONS", "TRAINER_PROFILERS", "TrainerConfig"),
    "hiersum.config.train": ("TrainConfig",),
    "hiersum.config.prepare": ("PrepareConfig",),
    "hiersum.config.evaluate": ("BootstrapConfig", "EvaluateConfig", "EvaluateSelectionConfig"),
    "hiersum.config.record_output": ("RecordOutputConfig",),
    "hiersum.config.summarize": ("SummarizeConfig", "ExportConfig"),
    "hiersum.config.serve": ("ServeLimits", "ServeConfig"),
    "hiersum.config.ranker": ("RankerModelConfig", "RankConfig"),
    "hiersum.config.train_ranker": ("RankerTrainConfig",),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    """A schema by name, from the module that defines it, imported on first use."""
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'hiersum.config' has no attribute {name!r}")
    value = getattr(importlib.import_module(_MODULE_OF[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__

