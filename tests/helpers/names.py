"""Dotted names of the package resolved to what they denote (the README's API table, docstrings' references)."""

from __future__ import annotations

import importlib


def resolve(name: str) -> object:
    """The object a dotted name denotes: the longest importable module prefix, then attributes (``AttributeError``
    where one is missing, ``ModuleNotFoundError`` where no prefix imports)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            target = getattr(target, attribute)
        return target
    raise ModuleNotFoundError(name)
