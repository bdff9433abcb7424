"""Deprecated: batched inference lives in :mod:`hiersum.inference` (``decoding`` is search over tensors only);
its names stay importable from here with a :class:`DeprecationWarning` (:mod:`hiersum.deprecation`)."""

from hiersum.deprecation import moved_names

__getattr__, __dir__ = moved_names(
    __name__, "hiersum.inference.batched", ["PRECISIONS", "Summary", "autocast", "iter_batches", "progress_bar",
                                            "summarize_encoded"]
)
