"""The training loss, apart from the LightningModule: a benchmark or test that computes it imports neither
Lightning nor torchmetrics (``scripts/bench_length.py`` starts a process a case).

Without copying the loss is the label-smoothed NLL of the output layer's logits (:func:`label_smoothed_nll`). With
``model.copy_attention`` it is the NLL of the mixture of generating and copying, label-smoothed over the generator's
distribution only (:func:`copy_nll`), as OpenNMT-py's copy generator loss leaves the copy part unsmoothed: smoothing
the mixture's log-probabilities would charge every step ``smoothing x mean_v -log P(v)``, lowest when the switch
stays on generating, a standing penalty on copying.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from hiersum.data.schema import IGNORE_INDEX
from hiersum.model.copy_attention import CopyOutput
from hiersum.model.summarizer import TeacherForcedOutput
from hiersum.training.logit_statistics import logit_statistics

__all__ = ["copy_nll", "coverage_loss", "label_smoothed_nll", "teacher_forced_nll"]


def label_smoothed_nll(logits: torch.Tensor, labels: torch.Tensor, smoothing: float) -> torch.Tensor:
    """Label-smoothed NLL of ``labels`` [B, S] (IGNORE_INDEX at padding) under ``logits`` [B, S, V], summed
    over the real target tokens and divided by their number (a tensor: no value read into Python, so a compiled
    step does not break on it); the one log-softmax runs inside ``F.cross_entropy``."""
    n_tokens = labels.ne(IGNORE_INDEX).sum().clamp(min=1)
    return F.cross_entropy(
        logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE_INDEX, label_smoothing=smoothing,
        reduction="sum",
    ) / n_tokens


def copy_nll(copy: CopyOutput, labels: torch.Tensor, smoothing: float) -> torch.Tensor:
    """The copy mixture's loss per real target token: ``(1 - smoothing) x -log P(label)`` under the mixture of
    ``copy`` (:meth:`CopyOutput.label_log_probs`: the label's probability alone, never the [B, S, V] mixture), plus
    ``smoothing x mean_v -log q(v)``, q the generator's softmax of ``copy.logits`` (the uniform part of label
    smoothing, on the generator alone). ``labels`` [B, S] (IGNORE_INDEX at padding). With ``smoothing=0``: the
    mixture's NLL. What it reads of the [B, S, V] logits comes from :func:`logit_statistics` (fp32, a block of rows
    at a time)."""
    real = labels.ne(IGNORE_INDEX)  # (B, S)
    n_tokens = real.sum().clamp(min=1)
    labels = labels.clamp(min=0)
    V = copy.logits.size(-1)
    stats = logit_statistics(copy.logits, labels.clamp(max=V - 1))  # an extended label: copying alone gives it
    generated_log_probs = stats.label_logit - stats.log_normalizer  # (B, S) log q(label)
    per_token = -(1 - smoothing) * copy.label_log_probs(labels, generated_log_probs)  # (B, S)
    if smoothing:
        per_token = per_token + smoothing * (stats.log_normalizer - stats.mean_logit)  # mean_v -log q(v)
    return per_token.masked_fill(~real, 0.0).sum() / n_tokens


def teacher_forced_nll(out: TeacherForcedOutput, labels: torch.Tensor, smoothing: float) -> torch.Tensor:
    """The training loss of a teacher-forced output per real target token: :func:`copy_nll` with copy attention
    (``out.copy``), else :func:`label_smoothed_nll` of ``out.logits``."""
    if out.copy is None:
        return label_smoothed_nll(out.logits, labels, smoothing)
    return copy_nll(out.copy, labels, smoothing)


def coverage_loss(per_position: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """See et al.'s coverage loss per real target token: ``per_position`` [B, S] (``CopyOutput.coverage_loss``:
    sum_i min(a_ti, c_ti)) summed over the positions whose label is real (``labels`` [B, S], IGNORE_INDEX at
    padding), divided by their number."""
    real = labels.ne(IGNORE_INDEX)  # (B, S)
    return per_position.masked_fill(~real, 0.0).sum() / real.sum().clamp(min=1)
