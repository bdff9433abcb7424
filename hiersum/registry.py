"""A name -> entry registry for an extension point (encoders, data formats): one lookup, one error."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hiersum.errors import UsageError

T = TypeVar("T")


class Registry(dict[str, T]):
    """Entries by name, for the config field ``field`` (e.g. ``model.encoder``) whose values are the names.

    A plain ``dict`` (iterate, ``in``, ``items()``) with :meth:`register` / :meth:`unregister` and
    :meth:`lookup`, whose error names the field, what was found and the registered names on one line.
    """

    def __init__(
        self, field: str, kind: str, *, check_name: Callable[[str], None] | None = None, docs: str | None = None
    ) -> None:
        super().__init__()
        self.field, self.kind, self.check_name = field, kind, check_name
        self.docs = docs
        """The documentation page the error of an unknown name points to (None: none)."""

    def register(self, name: str, entry: T, *, replace: bool = False) -> T:
        """Register ``entry`` as ``<field>=<name>``; an existing name needs ``replace=True``."""
        if not replace and name in self:
            raise ValueError(f"{self.field} {name!r} is already registered")
        if self.check_name is not None:
            self.check_name(name)
        self[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove an entry (tests and plugins clean up with it)."""
        self.pop(name, None)

    def lookup(self, name: str, *, field: str | None = None) -> T:
        """The entry of ``name``; an unknown name (a command line's choice) raises a one-line
        :class:`~hiersum.errors.UsageError`."""
        if name not in self:
            see = f" (see {self.docs})" if self.docs else ""
            raise UsageError(f"{field or self.field}: unknown {self.kind} {name!r}; "
                             f"registered {self.kind}s: {', '.join(sorted(self))}{see}")
        return self[name]
