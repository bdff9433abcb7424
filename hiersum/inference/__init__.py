"""Inference: the one summarizer (:func:`load_summarizer` -> :class:`Summarizer`, :mod:`hiersum.inference.pipeline`)
that ``hiersum summarize``, ``hiersum serve`` and a Python call decode with; batched decoding of examples encoded by
the data stage, grouped into padded batches under a token budget, decoded by :func:`hiersum.decoding.generate` and
turned back into text (:mod:`hiersum.inference.batched`) in one of Lightning's precisions
(:mod:`hiersum.inference.precision`); records and their output lines
(:mod:`hiersum.inference.summary_lines`), written record by record (:mod:`hiersum.inference.resumable_output`).

The stage between pure search (:mod:`hiersum.decoding`, which receives tensors and ``GenerationOptions``
only) and its users: training's validation ROUGE, evaluation, the ``summarize`` and ``rank`` commands and
``hiersum serve``.
"""

from hiersum.inference.batched import Summary, iter_batches, progress_bar, summarize_encoded
from hiersum.inference.pipeline import Summarizer, load_summarizer
from hiersum.inference.precision import PRECISIONS, DecodingPrecision, autocast

__all__ = ["PRECISIONS", "DecodingPrecision", "Summarizer", "Summary", "autocast", "iter_batches", "load_summarizer",
           "progress_bar", "summarize_encoded"]
