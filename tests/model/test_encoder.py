"""Encoder: shapes, padding invariance, pooling weights, finiteness with empty paragraphs."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.testing import assert_close

from tests.helpers.model import PAD, VOCAB, make_batch, make_model
from tests.helpers.padded import pack_real_tokens


def test_encode_shapes(model, batch):
    src, mask, _ = batch
    out = model.encode(src, mask, return_attention=True)
    B, P, T = src.shape
    n_real = mask.flatten(1).sum(-1)
    assert out.token_states.shape == (B, P, T, 32)
    assert out.memory.shape == (B, int(n_real.max()), 32)
    assert out.memory_mask.dtype == torch.bool
    assert out.memory_mask.sum(-1).tolist() == n_real.tolist()
    assert len(out.pooling_weights) == len(out.inter_attention) == 2
    assert out.pooling_weights[0].shape == (B, P, 4, T)
    assert out.inter_attention[0].shape == (B, 4, P, P)
    assert model.encode(src, mask).pooling_weights is None


def test_memory_packs_real_tokens_in_order(model, batch):
    src, mask, _ = batch
    out = model.encode(src, mask)
    for b in range(src.size(0)):
        real = out.token_states[b][mask[b]]  # (n_real, D), paragraph after paragraph
        assert_close(out.memory[b, : real.size(0)], real)
        assert out.memory[b, real.size(0) :].abs().sum() == 0


def test_pack_real_tokens_small_example():
    states = torch.arange(2 * 2 * 3, dtype=torch.float).view(2, 2, 3, 1)
    mask = torch.tensor([[[1, 0, 0], [1, 1, 0]], [[0, 0, 0], [1, 0, 0]]], dtype=torch.bool)
    memory, memory_mask = pack_real_tokens(states, mask)
    assert memory.squeeze(-1).tolist() == [[0.0, 3.0, 4.0], [9.0, 0.0, 0.0]]
    assert memory_mask.tolist() == [[True, True, True], [True, False, False]]


def test_appending_an_empty_paragraph_changes_nothing(model, batch):
    src, mask, tgt = batch
    wider = F.pad(src, (0, 0, 0, 1), value=PAD)  # (B, P+1, T)
    wider_mask = wider.ne(PAD)
    base = model.encode(src, mask)
    extra = model.encode(wider, wider_mask)
    assert_close(extra.token_states[:, :-1][mask], base.token_states[mask], atol=1e-5, rtol=0)
    assert_close(extra.memory, base.memory, atol=1e-5, rtol=0)
    real_tgt = tgt.ne(PAD)
    assert_close(
        model(wider, wider_mask, tgt).log_probs[real_tgt],
        model(src, mask, tgt).log_probs[real_tgt],
        atol=1e-5,
        rtol=0,
    )


def test_extra_pad_tokens_per_paragraph_change_nothing(model, batch):
    src, mask, tgt = batch
    longer = F.pad(src, (0, 3), value=PAD)  # (B, P, T+3)
    longer_mask = longer.ne(PAD)
    base = model.encode(src, mask)
    extra = model.encode(longer, longer_mask)
    assert_close(extra.token_states[:, :, :-3][mask], base.token_states[mask], atol=1e-5, rtol=0)
    real_tgt = tgt.ne(PAD)
    assert_close(
        model(longer, longer_mask, tgt).log_probs[real_tgt],
        model(src, mask, tgt).log_probs[real_tgt],
        atol=1e-5,
        rtol=0,
    )


def test_pad_token_ids_are_ignored(model, batch):
    """What sits at a masked position does not matter: only the mask says what is real."""
    src, mask, tgt = batch
    scrambled = src.masked_fill(~mask, 11)
    assert_close(
        model.encode(scrambled, mask).token_states[mask], model.encode(src, mask).token_states[mask]
    )


def test_real_tokens_do_matter(model, batch):
    """Guard against a vacuous invariance test: changing a real token changes the states."""
    src, mask, _ = batch
    changed = src.clone()
    changed[0, 3, 0] = (src[0, 3, 0] + 1) % VOCAB
    base = model.encode(src, mask).token_states
    other = model.encode(changed, mask).token_states
    # Inter layers carry the change to the other paragraphs of the example, not to other examples.
    assert not torch.allclose(base[0, 0][mask[0, 0]], other[0, 0][mask[0, 0]])
    assert_close(base[1:][mask[1:]], other[1:][mask[1:]])


def test_pooling_weights_sum_to_one_over_real_tokens(model, batch):
    src, mask, _ = batch
    for weights in model.encode(src, mask, return_attention=True).pooling_weights:
        w = weights.transpose(2, 3)  # (B, P, T, H)
        assert (w[~mask] == 0).all()
        sums = weights.sum(-1)  # (B, P, H)
        nonempty = mask.any(-1)
        assert_close(sums[nonempty], torch.ones_like(sums[nonempty]))
        assert (sums[~nonempty] == 0).all()
        assert (weights[0, 0] > 0).all()


def test_inter_attention_ignores_empty_paragraphs(model, batch):
    src, mask, _ = batch
    nonempty = mask.any(-1)  # (B, P)
    for attention in model.encode(src, mask, return_attention=True).inter_attention:
        assert (attention.transpose(1, 3)[~nonempty] == 0).all()  # no weight on an empty key
        assert_close(attention.sum(-1), torch.ones_like(attention.sum(-1)))


def test_empty_paragraphs_give_finite_outputs_and_gradients(batch, device):
    model = make_model(dropout=0.1, device=device).train()
    src, mask, tgt = batch
    log_probs = model(src, mask, tgt).log_probs
    assert torch.isfinite(log_probs).all()
    log_probs.sum().backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None and torch.isfinite(parameter.grad).all(), name


def test_tied_embeddings_and_init(device):
    model = make_model(device=device)
    table = model.encoder.embeddings.weight
    assert model.decoder.embeddings.weight is table
    assert model.generator.weight is table
    assert table[PAD].abs().sum() > 0  # Xavier-initialised like the official, pad row included
    assert model.generator.bias.shape == (VOCAB,)


def test_different_batches_differ(device):
    model = make_model(device=device)
    a, b = make_batch(0, device=device), make_batch(1, device=device)
    assert not torch.allclose(model(*a).log_probs, model(*b).log_probs)
