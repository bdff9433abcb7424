"""Batched inference: examples encoded by the data stage, grouped into padded batches under a token budget,
decoded by :func:`hiersum.decoding.generate` and turned back into text (:mod:`hiersum.inference.batched`).

The stage between pure search (:mod:`hiersum.decoding`, which receives tensors and ``GenerationOptions``
only) and its users: training's validation ROUGE, evaluation and the ``summarize`` command.
"""

from hiersum.inference.batched import PRECISIONS, Summary, autocast, iter_batches, progress_bar, summarize_encoded

__all__ = ["PRECISIONS", "Summary", "autocast", "iter_batches", "progress_bar", "summarize_encoded"]
