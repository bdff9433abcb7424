"""Training exposure for copying out-of-vocabulary words (``model.copy_oov``, ``optim.copy_oov_share``).

A model copies a word it cannot generate only if training showed it such words: a source word outside the
vocabulary gets a per-example extended id V + k (:mod:`hiersum.model.extended_embedding`: it embeds as ``<unk>``),
and a target word that is a copy of it is labelled with the same id, which only the copy attention can give
(OpenNMT-py's ``src_map`` and ``alignment``). A subword corpus has almost no ``<unk>`` (CNN/DM: 4 in 1.6M tokens), so
training hides words instead: each id that occurs both in an example's source and in its target is drawn with
probability ``share`` and becomes, everywhere in that example (source, fed target, labels), the example's next
extended id. The model then learns to point at an ``<unk>`` position to write what it cannot generate, whatever
the string there.

Dimensions
    B  batch
    V  vocabulary
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch
from torch import Tensor

from hiersum.data.schema import Batch


def hidden_word_table(
    src: Tensor, src_mask: Tensor, tgt: Tensor, tgt_mask: Tensor, *, share: float, vocab_size: int,
    kept_ids: Sequence[int], generator: torch.Generator | None = None,
) -> Tensor:
    """[B, V] long: per example, the id each vocabulary id becomes: itself, or V + K + k for the example's k-th hidden
    id (in id order), K being the extended ids its source already holds (its ``<unk>`` words encoded by their text,
    :mod:`hiersum.data.oov_words`). An id is hidden with probability ``share`` when it occurs among the real tokens of
    both the source (``src`` long [B, ...], ``src_mask`` bool, same shape) and the target (``tgt`` long [B, S],
    ``tgt_mask`` bool [B, S]), unless it is one of ``kept_ids`` (the special tokens). ``generator``: the draw's (on
    ``src``'s device)."""
    B, V = src.size(0), vocab_size
    flat_src, flat_mask = src.reshape(B, -1), src_mask.reshape(B, -1)  # (B, P * T)
    in_source = _occurs(flat_src, flat_mask, V)  # (B, V)
    in_target = _occurs(tgt, tgt_mask, V)  # (B, V)
    drawn = torch.rand(B, V, generator=generator, device=src.device) < share  # (B, V)
    hidden = in_source & in_target & drawn
    hidden[:, list(kept_ids)] = False
    held = (flat_src.masked_fill(~flat_mask, 0).amax(1, keepdim=True) + 1 - V).clamp(min=0)  # (B, 1): K
    identity = torch.arange(V, device=src.device).expand(B, V)  # (B, V)
    return torch.where(hidden, V + held + hidden.long().cumsum(1) - 1, identity)


def _occurs(ids: Tensor, mask: Tensor, vocab_size: int) -> Tensor:
    """[B, V] bool: which vocabulary ids occur among the real tokens (``mask``) of each row of ``ids`` [B, n] (an
    extended id, >= V, is none of them)."""
    counts = torch.zeros(ids.size(0), vocab_size, dtype=torch.long, device=ids.device)
    in_vocabulary = ids < vocab_size
    return counts.scatter_add_(1, ids.masked_fill(~in_vocabulary, 0), (mask & in_vocabulary).long()) > 0


def through_table(table: Tensor, ids: Tensor) -> Tensor:
    """``ids`` [B, ...] mapped through ``table`` [B, V] (:func:`hidden_word_table`), same shape; an extended id (>= V)
    stays as it is."""
    flat = ids.reshape(ids.size(0), -1)  # (B, n)
    V = table.size(1)
    return torch.where(flat < V, table.gather(1, flat.clamp(max=V - 1)), flat).view_as(ids)


def hide_copied_words(
    batch: Batch, *, share: float, vocab_size: int, kept_ids: Sequence[int], generator: torch.Generator | None = None,
) -> Batch:
    """``batch`` with the ids :func:`hidden_word_table` draws replaced by extended ids in ``src``, ``tgt_in`` and
    ``tgt_out`` (the other fields shared)."""
    table = hidden_word_table(batch.src, batch.src_mask, batch.tgt_out, batch.tgt_mask, share=share,
                              vocab_size=vocab_size, kept_ids=kept_ids, generator=generator)  # (B, V)
    return replace(batch, src=through_table(table, batch.src), tgt_in=through_table(table, batch.tgt_in),
                   tgt_out=through_table(table, batch.tgt_out))
