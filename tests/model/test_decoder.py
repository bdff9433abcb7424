"""Decoder: shapes, causality, cached decoding equals the teacher-forced recompute; each of them with copy
attention (``model.copy_attention``) as well, whose state carries per-example memory that reorders with the rows."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from tests.helpers.model import VOCAB, make_model, stepped_log_probs


@pytest.fixture(params=[{}, {"copy_attention": True}, {"copy_attention": True, "coverage": True}],
                ids=["plain", "copy", "coverage"])
def model(request, device):
    """The model tests' network, without and with copy attention, and with its coverage."""
    return make_model(device=device, **request.param)


def test_log_probs_shape_and_normalisation(model, batch, device):
    src, mask, tgt = batch
    log_probs = model(src, mask, tgt).log_probs
    assert log_probs.shape == (*tgt.shape, VOCAB)
    assert_close(log_probs.exp().sum(-1), torch.ones(tgt.shape, device=device))


def test_decoder_is_causal(model, batch):
    src, mask, tgt = batch
    changed = tgt.clone()
    changed[:, 4] = (tgt[:, 4] + 1) % VOCAB
    base = model(src, mask, tgt).log_probs
    other = model(src, mask, changed).log_probs
    assert_close(other[:, :4], base[:, :4])
    assert not torch.allclose(other[:, 4:], base[:, 4:])


def test_cached_steps_equal_teacher_forcing(model, batch):
    src, mask, tgt = batch
    full = model(src, mask, tgt).log_probs
    steps, state = stepped_log_probs(model, tgt, model.init_decoder_state(model.encode(src, mask)))
    assert state.length == tgt.size(1)
    assert state.decoder.self_attn.layer(0, state.length).keys.shape[2] == tgt.size(1)
    assert_close(steps, full, atol=1e-5, rtol=0)


def test_chunked_decoding_equals_teacher_forcing(model, batch):
    """Feeding the target in two chunks through the cache gives the same states."""
    src, mask, tgt = batch
    full = model(src, mask, tgt).log_probs
    state = model.init_decoder_state(model.encode(src, mask))
    first = model.decoder(tgt[:, :3], state.decoder)
    second = model.decoder(tgt[:, 3:], first.state)
    chunked = model.next_log_probs(torch.cat([first.states, second.states], 1), tgt, state)
    assert_close(chunked, full, atol=1e-5, rtol=0)


def test_reorder_selects_rows(model, batch, device):
    src, mask, tgt = batch
    state = model.init_decoder_state(model.encode(src, mask))
    state = model.step(tgt[:, 0], state).state
    order = torch.tensor([2, 0, 0], device=device)
    reordered = model.step(tgt[order, 1], state.reorder(order)).log_probs
    direct = model.step(tgt[:, 1], state).log_probs[order]
    assert_close(reordered, direct)


def test_preallocated_cache_is_written_in_place(model, batch):
    """With room for the whole target, stepping never reallocates the cache and still equals
    teacher forcing; a smaller capacity grows and gives the same result."""
    src, mask, tgt = batch
    full = model(src, mask, tgt).log_probs
    encoded = model.encode(src, mask)
    for capacity in (tgt.size(1), 2):
        state = model.init_decoder_state(encoded, cache_capacity=capacity)
        first_buffer = state.decoder.self_attn.buffers[0].data_ptr()
        steps, state = stepped_log_probs(model, tgt, state)
        assert_close(steps, full, atol=1e-5, rtol=0)
        assert (state.decoder.self_attn.buffers[0].data_ptr() == first_buffer) == (capacity == tgt.size(1))
        assert state.decoder.self_attn.capacity >= tgt.size(1)


@torch.inference_mode()
def test_beam_reorder_equals_copying_reorder_without_allocating(model, batch, device):
    """reorder_beams (in place when few rows move, a buffer swap when most do) equals the general
    copying reorder over several steps, and only ever uses two buffers per layer."""
    src, mask, tgt = batch
    K = 2
    start = model.init_decoder_state(model.encode(src, mask), cache_capacity=8).tile(K)
    fast, slow = start, start.reorder(torch.arange(start.rows, device=device))
    rows = torch.arange(start.rows, device=device)
    few_move = torch.tensor([1, 1, 2, 3, 4, 5], device=device)  # one row of example 0 moves
    most_move = torch.tensor([1, 1, 3, 2, 4, 4], device=device)  # four of six rows move
    generator = torch.Generator().manual_seed(1)  # on the CPU: the same tokens on every device
    pointers = set()
    for origin in (few_move, most_move, rows, most_move, few_move, few_move):
        tokens = torch.randint(7, VOCAB, (fast.rows,), generator=generator).to(device)
        a, b = model.step(tokens, fast), model.step(tokens, slow)
        assert_close(a.log_probs, b.log_probs, atol=1e-5, rtol=0)
        before = a.state.decoder.self_attn.buffers[0].data_ptr()
        fast, slow = a.state.reorder_beams(origin), b.state.reorder(origin)
        in_place = fast.decoder.self_attn.buffers[0].data_ptr() == before
        assert in_place == (origin is not most_move)
        pointers.update(buffer.data_ptr() for buffer in fast.decoder.self_attn.buffers)
    assert_close(model.step(tokens, fast).log_probs, model.step(tokens, slow).log_probs, atol=1e-5, rtol=0)
    assert len(pointers) == 2 * len(model.decoder.layers)


def test_state_without_cache_cannot_be_continued(model, batch):
    src, mask, tgt = batch
    state = model.init_decoder_state(model.encode(src, mask), cache_capacity=None).decoder
    out = model.decoder(tgt, state)
    assert out.state.self_attn is None and out.state.length == tgt.size(1)
    with pytest.raises(ValueError, match="no self-attention cache"):
        model.decoder(tgt[:, :1], out.state)
