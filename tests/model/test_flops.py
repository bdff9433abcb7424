"""The FLOPs of a training step counted on the real tokens (:mod:`hiersum.model.flops`) agree with
``FlopCounterMode`` on a batch without padding, and padding does not count."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from hiersum.model.flops import flop_counter, forward_flops, training_flops
from hiersum.model.summarizer import HierSum
from tests.helpers.config import tiny_model_config

VOCAB = 97


def counted_step(model: HierSum, src: torch.Tensor, src_mask: torch.Tensor, tgt: torch.Tensor) -> int:
    """What FlopCounterMode counts of one forward and backward pass of the loss."""
    with flop_counter() as counter:
        logits = model.logits(src, src_mask, tgt)
        F.cross_entropy(logits.flatten(0, 1), tgt.flatten()).backward()
    return counter.get_total_flops()


@pytest.mark.parametrize("changes", [{}, {"inter_layers": [1], "decoder_layers": 1, "ff_size": 48}])
def test_the_count_agrees_with_the_flop_counter_without_padding(changes):
    config = tiny_model_config(**changes)
    torch.manual_seed(0)
    model = HierSum(config, vocab_size=VOCAB, pad_id=0, bos_id=1, eos_id=2)
    src = torch.randint(3, VOCAB, (2, 3, 7))  # (B, P, T), every token real
    tgt = torch.randint(3, VOCAB, (2, 5))  # (B, S)
    src_mask, tgt_mask = torch.ones_like(src, dtype=torch.bool), torch.ones_like(tgt, dtype=torch.bool)
    counted = counted_step(model, src, src_mask, tgt)
    estimate = training_flops(config, VOCAB, src_mask, tgt_mask)
    assert estimate == pytest.approx(counted, rel=0.05)


def test_padding_adds_no_flops_and_real_tokens_do():
    config = tiny_model_config()
    mask = torch.ones(2, 3, 7, dtype=torch.bool)
    target = torch.ones(2, 5, dtype=torch.bool)
    padded = torch.cat([mask, torch.zeros(2, 3, 4, dtype=torch.bool)], dim=-1)  # 4 padding tokens a paragraph
    extra_paragraph = torch.cat([mask, torch.zeros(2, 1, 7, dtype=torch.bool)], dim=1)  # an empty paragraph
    base = forward_flops(config, VOCAB, mask, target)
    assert forward_flops(config, VOCAB, padded, target) == base
    padded_target = torch.cat([target, torch.zeros(2, 3, dtype=torch.bool)], 1)
    assert forward_flops(config, VOCAB, extra_paragraph, padded_target) == base
    assert forward_flops(config, VOCAB, mask, torch.ones(2, 6, dtype=torch.bool)) > base
    assert training_flops(tiny_model_config(encoder="flat"), VOCAB, mask.flatten(1), target) is None
