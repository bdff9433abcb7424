"""Deprecated: the official-checkpoint import lives in :mod:`hiersum.checkpoints.official`; its names stay
importable from here with a :class:`DeprecationWarning` (:mod:`hiersum.deprecation`)."""

from hiersum.deprecation import moved_names

__getattr__, __dir__ = moved_names(
    __name__, "hiersum.checkpoints.official", ["hiersum_from_official", "load_official_hiersumm",
                                               "read_official_checkpoint"]
)
