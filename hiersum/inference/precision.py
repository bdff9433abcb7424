"""What decoding does under each precision: one table (:data:`PRECISIONS`) from Lightning's names
(:data:`hiersum.config.Precision`, aliases read as the precision they are) to the dtype of the weights and the
dtype autocast computes in.

The weights are converted once, when a summarizer is loaded (:func:`hiersum.inference.load_summarizer`); decoding
converts nothing: :func:`summarize_encoded <hiersum.inference.summarize_encoded>` refuses a model whose weights are
not in its precision's dtype (:func:`check_weights`), so a ``bf16-true`` model never decodes a ``32`` call in
bfloat16.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

from hiersum.config import Precision


@dataclass(frozen=True)
class DecodingPrecision:
    """What decoding does under one precision."""

    weights: torch.dtype
    """The dtype of the model's weights and of a batch's floating tensors (the paragraph graph)."""
    autocast: torch.dtype | None = None
    """The dtype autocast computes in, the weights left in ``weights``; None: no autocast."""

    @property
    def computes(self) -> torch.dtype:
        """The dtype of the matrix products."""
        return self.autocast or self.weights

    def autocast_on(self, device: torch.device | str) -> contextlib.AbstractContextManager:
        """Autocast to :attr:`autocast` on ``device``; nothing without one."""
        if self.autocast is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=torch.device(device).type, dtype=self.autocast)


PRECISIONS: dict[Precision, DecodingPrecision] = {
    Precision("32-true"): DecodingPrecision(torch.float32),
    Precision("64-true"): DecodingPrecision(torch.float64),
    Precision("bf16-mixed"): DecodingPrecision(torch.float32, autocast=torch.bfloat16),
    Precision("16-mixed"): DecodingPrecision(torch.float32, autocast=torch.float16),
    Precision("bf16-true"): DecodingPrecision(torch.bfloat16),
    Precision("16-true"): DecodingPrecision(torch.float16),
    Precision("transformer-engine"): DecodingPrecision(torch.bfloat16),
    Precision("transformer-engine-float16"): DecodingPrecision(torch.float16),
}
"""Each of Lightning's precisions (a test keeps the keys :data:`hiersum.config.Precision`'s) and what decoding does
under it, as Lightning's plugin does to the weights and the computations in training: ``32-true`` / ``64-true`` the
weights in float32 / float64; ``bf16-mixed`` / ``16-mixed`` float32 weights under autocast; ``bf16-true`` /
``16-true`` the weights in bfloat16 / float16 (half their memory). The Transformer Engine precisions decode as
``bf16-true`` / ``16-true``: their FP8 layers are a training plugin's, and decoding runs ``torch`` layers. Float16
needs a CUDA device (:func:`hiersum.inference.pipeline.checked_device`)."""


def decoding_precision(precision: str) -> DecodingPrecision:
    """What decoding does under ``precision`` (one of Lightning's names or aliases); a ``ValueError`` naming the
    choices otherwise."""
    return PRECISIONS[Precision.coerce(precision, "precision")]


def autocast(device: torch.device | str, precision: str) -> contextlib.AbstractContextManager:
    """Autocast on ``device`` as decoding under ``precision`` does (nothing where the weights' dtype is the
    computations', ``32`` and ``bf16-true`` among them)."""
    return decoding_precision(precision).autocast_on(device)


def check_weights(model: torch.nn.Module, precision: str) -> DecodingPrecision:
    """What decoding does under ``precision``, once ``model``'s weights are checked to be in its dtype: a
    ``ValueError`` naming both dtypes otherwise (decoding converts no weights: a summarizer is converted when
    loaded)."""
    decoding = decoding_precision(precision)
    found = next(model.parameters()).dtype
    if found != decoding.weights:
        raise ValueError(
            f"precision={precision} decodes weights in {decoding.weights}; found the model's in {found}: load it in "
            f"that precision (load_summarizer(path, precision='{precision}')) or convert it first "
            f"(model.to({decoding.weights}))")
    return decoding
