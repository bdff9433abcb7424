"""The training loss, apart from the LightningModule: a benchmark or test that computes it imports neither
Lightning nor torchmetrics (``scripts/bench_length.py`` starts a process a case)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from hiersum.data.schema import IGNORE_INDEX

__all__ = ["label_smoothed_nll"]


def label_smoothed_nll(logits: torch.Tensor, labels: torch.Tensor, smoothing: float) -> torch.Tensor:
    """Label-smoothed NLL of ``labels`` [B, S] (IGNORE_INDEX at padding) under ``logits`` [B, S, V], summed
    over the real target tokens and divided by their number (a tensor: no value read into Python, so a compiled
    step does not break on it); the one log-softmax runs inside ``F.cross_entropy``. With ``model.copy_attention``
    the logits are the copy mixture's log-probabilities (``TeacherForcedOutput.logits``), which it leaves as they
    are: the loss is the mixture's."""
    n_tokens = labels.ne(IGNORE_INDEX).sum().clamp(min=1)
    return F.cross_entropy(
        logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE_INDEX, label_smoothing=smoothing,
        reduction="sum",
    ) / n_tokens
