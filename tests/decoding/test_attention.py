"""Attention inspection: most attended paragraphs."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from hiersum.decoding.attention import received_attention, top_paragraphs
from hiersum.model.encoder import EncoderOutput
from tests.helpers.model import make_batch, make_model


def output_with(attention: torch.Tensor) -> EncoderOutput:
    empty = torch.zeros(attention.size(0), 1, 1)
    return EncoderOutput(token_states=empty, memory=empty, memory_mask=empty.bool(), inter_attention=[attention])


def test_top_paragraphs_ranks_by_attention_received_in_the_last_layer():
    attention = torch.zeros(1, 2, 3, 3)  # (B, H, P, P); paragraph 2 is padding
    attention[0, 0, :, 1] = 1.0  # head 0: everyone attends to paragraph 1
    attention[0, 1, :, 0] = 1.0  # head 1: everyone attends to paragraph 0 ...
    attention[0, 1, 1] = torch.tensor([0.0, 1.0, 0.0])  # ... but paragraph 1 to itself
    ranked = top_paragraphs(output_with(attention), [[(4, 0), (7, 2)]], k=5)
    assert ranked == [[(7, 2, pytest.approx(0.75)), (4, 0, pytest.approx(0.25))]]
    assert top_paragraphs(output_with(attention), [[(4, 0), (7, 2)]], k=1) == [[(7, 2, pytest.approx(0.75))]]


def test_received_attention_of_a_model_sums_to_one_over_real_paragraphs(device):
    src, mask, _ = make_batch(device=device)
    encoded = make_model(device=device).encode(src, mask, return_attention=True)
    real = mask.any(-1)
    received = received_attention(encoded, real)  # (B, P, H)
    assert received.shape == (3, 4, 4)
    assert_close(received.sum(1), torch.ones(3, 4, device=device))
    assert (received[~real] == 0).all()
    provenance = [[(d, p) for p in range(4)] for d in range(3)]
    ranked = top_paragraphs(encoded, provenance, k=2)
    assert [len(r) for r in ranked] == [2, 2, 2]
    assert ranked[2][0][:2] == (2, 0)  # example 2 has one real paragraph: it takes all the weight
    assert ranked[2][0][2] == pytest.approx(1.0)
    assert ranked[2][1][2] == 0.0  # the next one is a padding paragraph
    for b, entries in enumerate(ranked):  # best first, distinct paragraphs of the example's provenance
        weights = [weight for _, _, weight in entries]
        assert weights == sorted(weights, reverse=True) and weights[0] > 0
        assert len({paragraph for _, paragraph, _ in entries}) == len(entries)
        assert all(document == b and (weight == 0.0 or real[b, paragraph]) for document, paragraph, weight in entries)
    with pytest.raises(ValueError, match="return_attention"):
        top_paragraphs(make_model(device=device).encode(src, mask), provenance, k=1)
