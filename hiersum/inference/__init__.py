"""Inference: the one summarizer (:func:`load_summarizer` -> :class:`Summarizer`, :mod:`hiersum.inference.pipeline`)
that ``hiersum summarize``, ``hiersum serve`` and a Python call decode with; batched decoding of examples encoded by
the data stage, grouped into padded batches under a token budget, decoded by :func:`hiersum.decoding.generate` and
turned back into text (:mod:`hiersum.inference.batched`); records and their output lines
(:mod:`hiersum.inference.records`), written record by record (:mod:`hiersum.inference.record_output`).

The stage between pure search (:mod:`hiersum.decoding`, which receives tensors and ``GenerationOptions``
only) and its users: training's validation ROUGE, evaluation, the ``summarize`` and ``rank`` commands and
``hiersum serve``.
"""

from hiersum.inference.batched import PRECISIONS, Summary, autocast, iter_batches, progress_bar, summarize_encoded
from hiersum.inference.pipeline import Summarizer, load_summarizer

__all__ = ["PRECISIONS", "Summarizer", "Summary", "autocast", "iter_batches", "load_summarizer", "progress_bar",
           "summarize_encoded"]
