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

The modules import no Hydra, OmegaConf or Lightning, every schema is a class a type checker reads (``make lint``
runs mypy), and this package imports every schema from its module (``from hiersum.config import
DecodeConfig`` and ``from hiersum.config.decode import DecodeConfig`` are one class).

=================  =====================================================================
module             schemas
=================  =====================================================================
``choices``        :class:`ConfigEnum` and the fixed choices (``Graph``, ``Selection``...)
``checks``         ``MISSING``, :func:`config_dict`, the value checks
``model``          :class:`ModelConfig`
``selection``      :class:`ParagraphSelection` (the one type of paragraph selection), :class:`SelectionOverrides`
``data``           :class:`TokenizerConfig`, :class:`DataConfig` (extends :class:`ParagraphSelection`),
                   :data:`LINE_LAYOUT_FIELDS`
``optim``          :class:`OptimConfig`, :class:`ParameterGroupConfig`
``decode``         :class:`DecodeConfig`
``summary_options`` :class:`SummaryOptions` (what summarize and serve share)
``input_output``   :class:`InputOutputConfig` (what summarize and rank share)
``trainer``        :class:`TrainerConfig` (``pytorch_lightning.Trainer``'s arguments)
``train``          :class:`TrainConfig`
``prepare``        :class:`PrepareConfig`
``evaluate``       :class:`EvaluateConfig`, :class:`EvaluateSelectionConfig`, :class:`BootstrapConfig`
``summarize``      :class:`SummarizeConfig`, :class:`ExportConfig`
``serve``          :class:`ServeConfig`, :class:`ServeLimits`
``ranker_model``   :class:`RankerModelConfig` (the ``ranker_model`` group)
``rank``           :class:`RankConfig`
``train_ranker``   :class:`RankerTrainConfig`
=================  =====================================================================

The run's exceptions and exit statuses (``UsageError``, ``RunStopped``...) live in :mod:`hiersum.errors`.
"""

from __future__ import annotations

from hiersum.config.checks import MISSING, config_dict
from hiersum.config.choices import (
    Baseline,
    ConfigEnum,
    Graph,
    LogLevel,
    OnError,
    Paragraphs,
    Precision,
    RankerFeature,
    Selection,
    SelectionStrategy,
    ServeAccelerator,
    ServeHost,
    Stopping,
    TextNormalization,
)
from hiersum.config.data import LINE_LAYOUT_FIELDS, DataConfig, TokenizerConfig
from hiersum.config.decode import DecodeConfig
from hiersum.config.evaluate import BootstrapConfig, EvaluateConfig, EvaluateSelectionConfig
from hiersum.config.input_output import InputOutputConfig
from hiersum.config.model import ModelConfig
from hiersum.config.optim import NOAM_SCHEDULER, OptimConfig, ParameterGroupConfig
from hiersum.config.prepare import PrepareConfig
from hiersum.config.rank import RankConfig
from hiersum.config.ranker_model import RankerModelConfig
from hiersum.config.selection import SELECTION_FIELDS, ParagraphSelection, SelectionOverrides
from hiersum.config.serve import ServeConfig, ServeLimits
from hiersum.config.summarize import ExportConfig, SummarizeConfig
from hiersum.config.summary_options import SummaryOptions
from hiersum.config.train import TrainConfig
from hiersum.config.train_ranker import RankerTrainConfig
from hiersum.config.trainer import TRAINER_ACCELERATORS, TRAINER_PROFILERS, TrainerConfig

__all__ = [
    "Baseline", "BootstrapConfig", "ConfigEnum", "DataConfig", "DecodeConfig", "EvaluateConfig",
    "EvaluateSelectionConfig", "ExportConfig", "Graph", "InputOutputConfig", "LINE_LAYOUT_FIELDS", "LogLevel",
    "MISSING", "ModelConfig",
    "NOAM_SCHEDULER", "OnError", "OptimConfig", "ParagraphSelection", "Paragraphs", "ParameterGroupConfig",
    "Precision", "PrepareConfig", "RankConfig", "RankerFeature", "RankerModelConfig", "RankerTrainConfig",
    "SELECTION_FIELDS", "Selection", "SelectionOverrides", "SelectionStrategy", "ServeAccelerator", "ServeConfig",
    "ServeHost", "ServeLimits", "Stopping", "SummarizeConfig", "SummaryOptions", "TRAINER_ACCELERATORS",
    "TRAINER_PROFILERS", "TextNormalization", "TokenizerConfig", "TrainConfig", "TrainerConfig", "config_dict",
]
