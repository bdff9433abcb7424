"""Hyper-parameters of checkpoints written by earlier versions, read into today's schemas."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hiersum.config.optim import OptimConfig, adam_defaults, noam_defaults

FLAT_OPTIM_KEYS = ("lr", "warmup_steps", "betas", "eps", "weight_decay")
"""The ``optim`` keys of the flat shape of earlier versions (Adam + noam, no ``_target_`` nodes)."""


def optim_config(values: Mapping[str, Any]) -> OptimConfig:
    """The :class:`OptimConfig` of a checkpoint's ``optim`` hyper-parameters, today's shape or the flat shape of
    earlier versions (``lr``, ``warmup_steps``, ``betas``, ``eps``, ``weight_decay``, ``label_smoothing``: Adam +
    noam), which becomes Adam and noam nodes holding those values."""
    values = dict(values)
    flat = {key: values.pop(key) for key in FLAT_OPTIM_KEYS if key in values}
    if flat:
        optimizer, scheduler = adam_defaults(), noam_defaults()
        optimizer.update({key: flat[key] for key in ("betas", "eps", "weight_decay") if key in flat})
        scheduler.update({key: flat[key] for key in ("lr", "warmup_steps") if key in flat})
        values = {"optimizer": optimizer, "scheduler": scheduler, **values}
    return OptimConfig(**values)
