"""Decoder: shapes, causality, cached decoding equals the teacher-forced recompute."""

from __future__ import annotations

import torch
from torch.testing import assert_close

from tests.model.model_testkit import VOCAB


def test_log_probs_shape_and_normalisation(model, batch):
    src, mask, tgt = batch
    log_probs = model.log_probs(src, mask, tgt)
    assert log_probs.shape == (*tgt.shape, VOCAB)
    assert_close(log_probs.exp().sum(-1), torch.ones(tgt.shape))


def test_decoder_is_causal(model, batch):
    src, mask, tgt = batch
    changed = tgt.clone()
    changed[:, 4] = (tgt[:, 4] + 1) % VOCAB
    base = model.log_probs(src, mask, tgt)
    other = model.log_probs(src, mask, changed)
    assert_close(other[:, :4], base[:, :4])
    assert not torch.allclose(other[:, 4:], base[:, 4:])


def test_cached_steps_equal_teacher_forcing(model, batch):
    src, mask, tgt = batch
    full = model.log_probs(src, mask, tgt)
    state = model.init_decoder_state(model.encode(src, mask))
    steps = []
    for t in range(tgt.size(1)):
        out = model.step(tgt[:, t], state)
        state = out.state
        steps.append(out.log_probs)
    assert state.length == tgt.size(1)
    assert state.self_attn.layer(0, state.length).keys.shape[2] == tgt.size(1)
    assert_close(torch.stack(steps, 1), full, atol=1e-5, rtol=0)


def test_chunked_decoding_equals_teacher_forcing(model, batch):
    """Feeding the target in two chunks through the cache gives the same states."""
    src, mask, tgt = batch
    full = model.log_probs(src, mask, tgt)
    state = model.init_decoder_state(model.encode(src, mask))
    first = model.decoder(tgt[:, :3], state)
    second = model.decoder(tgt[:, 3:], first.state)
    chunked = model.output_log_probs(torch.cat([first.states, second.states], 1))
    assert_close(chunked, full, atol=1e-5, rtol=0)


def test_reorder_selects_rows(model, batch):
    src, mask, tgt = batch
    state = model.init_decoder_state(model.encode(src, mask))
    state = model.step(tgt[:, 0], state).state
    order = torch.tensor([2, 0, 0])
    reordered = model.step(tgt[order, 1], state.reorder(order)).log_probs
    direct = model.step(tgt[:, 1], state).log_probs[order]
    assert_close(reordered, direct)
