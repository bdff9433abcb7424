"""What every schema shares: the MISSING marker, the value checks of ``__post_init__`` and :func:`config_dict`.

``MISSING`` is OmegaConf's marker of a value the YAML must give (``"???"``), spelled here so that the schemas
import no OmegaConf: Hydra reads it as its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from enum import Enum
from typing import Any

MISSING: Any = "???"
"""A value the YAML (or the command line) must give: ``omegaconf.MISSING``."""


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def config_dict(config: Any) -> dict[str, Any]:
    """``asdict(config)`` with plain values only (an enum member becomes its string): what a checkpoint
    stores, loadable with ``torch.load(weights_only=True)`` and rebuilt by ``Schema(**values)``."""
    return _plain(asdict(config))


def check(ok: bool, key: str, expected: str, value: Any) -> None:
    """``ValueError`` ``KEY must be EXPECTED, found VALUE`` unless ``ok``."""
    if not ok:
        raise ValueError(f"{key} must be {expected}, found {value!r}")


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def at_least_one(config: Any, *names: str) -> None:
    for name in names:
        if getattr(config, name) < 1:
            raise ValueError(f"{name} must be >= 1, found {getattr(config, name)}")
