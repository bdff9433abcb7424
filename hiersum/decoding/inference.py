"""Kept for compatibility: batched inference lives in :mod:`hiersum.inference` (``decoding`` is search over
tensors only)."""

from hiersum.inference.batched import PRECISIONS, Summary, autocast, iter_batches, progress_bar, summarize_encoded

__all__ = ["PRECISIONS", "Summary", "autocast", "iter_batches", "progress_bar", "summarize_encoded"]
