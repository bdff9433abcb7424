"""Old import paths kept as lazy module attributes: a module whose content moved keeps its names importable,
each first use warning with a :class:`DeprecationWarning` that says where the name lives now.

A kept module is two lines (``hiersum/convert.py``)::

    from hiersum.deprecation import moved_names

    __getattr__, __dir__ = moved_names(__name__, "hiersum.checkpoints.official", ["load_official_hiersumm"])

The new module is imported only when an old name is used (``importlib``), so a kept module adds no import and no
arrow to the house that tests/test_layout.py draws. This module imports nothing of hiersum.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Sequence
from typing import Any


def moved_names(old: str, new: str, names: Sequence[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of the module ``old`` whose ``names`` moved to the module
    ``new``: reading one of them warns and returns ``new``'s; any other name raises :class:`AttributeError`."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(f"{old}.{name} is deprecated: import it from {new} (the old path will be removed)",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(new), name)

    def __dir__() -> list[str]:
        return sorted(names)

    return __getattr__, __dir__
