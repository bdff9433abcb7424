"""Training with Lightning: the LightningModule, callbacks, the noam schedule, the fit of a composed config.

``HierSumModule`` and ``module_hparams`` are imported on first use: the entry point of ``hiersum train``
imports :mod:`hiersum.training.launchers` before Hydra composes, without loading Lightning.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["HierSumModule", "module_hparams"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("hiersum.training.module"), name)
    raise AttributeError(f"module 'hiersum.training' has no attribute {name!r}")
