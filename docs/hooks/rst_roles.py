"""A griffe extension for the API reference: hiersum's docstrings cite names with Sphinx roles
(``:class:`~hiersum.data.schema.Example```); Markdown has no roles, so each becomes a code span
(``Example``: a leading ``~`` keeps the last name only, as Sphinx shows it)."""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj):`(~?)([^`]+)`")


def _code(match: re.Match[str]) -> str:
    short, name = match.groups()
    return f"`{name.rsplit('.', 1)[-1] if short else name}`"


class RstRoles(griffe.Extension):
    """Rewrite the Sphinx roles of every docstring as Markdown code spans."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(_code, obj.docstring.value)
