"""The packed encoder (real tokens only, hiersum.data.packing) against the padded-grid reference
(tests/helpers/padded.py, same weights) on ragged batches: outputs within 1e-5, gradients within 1e-4
relative; and the packed layout itself."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from hiersum.data.packing import BUCKET_WIDTHS, MIN_BUCKET_PARAGRAPHS, PackedGrid, bucket_width
from hiersum.model.layers import MultiHeadAttention
from hiersum.model.pooling import pooling_penalty
from tests.helpers.model import PAD, VOCAB, make_model, random_graph
from tests.helpers.padded import pack_real_tokens, use_padded_grid


def ragged_batch(seed: int, *, B: int = 4, P: int = 5, T: int = 9, holes: bool = False):
    """src [B, P, T] with random paragraph lengths (0 to T: empty paragraphs included) and, with
    ``holes``, masked positions inside paragraphs; its mask; tgt_in [B, 6] padded at the end."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, T + 1, (B, P), generator=generator)
    lengths[0, 0] = T  # the grid is as wide as its longest paragraph
    mask = torch.arange(T) < lengths.unsqueeze(-1)  # (B, P, T)
    if holes:
        mask &= torch.rand(B, P, T, generator=generator) > 0.2
        mask[0, 0, 0] = True
    src = torch.randint(7, VOCAB, (B, P, T), generator=generator).masked_fill(~mask, PAD)
    tgt = torch.randint(7, VOCAB, (B, 6), generator=generator)
    tgt[:, 0] = 4
    tgt[1:, 4:] = PAD
    return src, mask, tgt


def packed_and_padded(**overrides):
    packed = make_model(**overrides)
    return packed, use_padded_grid(copy.deepcopy(packed))


CASES = [  # (batch seed, holes inside paragraphs, grid width T: 9 spans buckets of width 8 and 12, 30 six buckets)
    (0, False, 9), (1, False, 30), (2, False, 5), (3, True, 30), (4, True, 9),
]


@pytest.mark.parametrize(("seed", "holes", "T"), CASES)
def test_packed_encoder_outputs_equal_the_padded_reference(seed, holes, T):
    src, mask, tgt = ragged_batch(seed, holes=holes, T=T)
    packed, padded = packed_and_padded()
    with torch.no_grad():
        got = packed.encode(src, mask, return_attention=True)
        expected = padded.encode(src, mask, return_attention=True)
        assert_close(got.token_states[mask], expected.token_states[mask], atol=1e-5, rtol=0)
        # guard: the reference really ran the padded grid (its padding holds states; the packed path's zeros)
        assert (got.token_states[~mask] == 0).all() and (expected.token_states[~mask] != 0).any()
        assert torch.equal(got.memory_mask, expected.memory_mask)
        assert_close(got.memory, expected.memory, atol=1e-5, rtol=0)
        for mine, theirs in zip(got.pooling_weights, expected.pooling_weights, strict=True):
            assert_close(mine, theirs, atol=1e-5, rtol=0)
        for mine, theirs in zip(got.inter_attention, expected.inter_attention, strict=True):
            assert_close(mine, theirs, atol=1e-5, rtol=0)
        real_tgt = tgt.ne(PAD)
        assert_close(packed(src, mask, tgt).log_probs[real_tgt], padded(src, mask, tgt).log_probs[real_tgt],
                     atol=1e-5, rtol=0)


def gradients(model, src, mask, tgt, graph=None) -> dict[str, torch.Tensor]:
    model.zero_grad()
    real_tgt = tgt.ne(PAD)
    out = model(src, mask, tgt, paragraph_graph=graph, return_attention=True)
    loss = -out.log_probs[real_tgt].max(-1).values.sum()
    (loss + pooling_penalty(out.encoded.pooling_weights, mask)).backward()
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize(("seed", "holes", "T"), CASES)
def test_packed_encoder_gradients_equal_the_padded_reference(seed, holes, T):
    src, mask, tgt = ragged_batch(seed, holes=holes, T=T)
    packed, padded = packed_and_padded(graph="similarity")
    graph = random_graph(mask, seed)
    got, expected = gradients(packed.train(), src, mask, tgt, graph), gradients(padded.train(), src, mask, tgt, graph)
    assert got.keys() == expected.keys() and len(got) == len(list(packed.parameters()))
    for name, gradient in expected.items():
        if name.endswith(("key.bias", "pooling.score.bias")):  # shifts every score of a softmax alike: gradient 0
            assert got[name].abs().max() < 1e-5 and gradient.abs().max() < 1e-5, name
            continue
        relative = (got[name] - gradient).norm() / gradient.norm()
        assert relative <= 1e-4, f"{name}: relative difference {relative:.2e}"


def test_the_gradient_check_can_fail():
    """Guard: a changed weight gives gradients the check above tells apart."""
    src, mask, tgt = ragged_batch(1)
    packed, padded = packed_and_padded()
    with torch.no_grad():
        padded.encoder.layers[0].self_attn.key.weight.mul_(1.01)
    got, expected = gradients(packed, src, mask, tgt), gradients(padded, src, mask, tgt)
    weight = "encoder.layers.0.self_attn.query.weight"
    assert (got[weight] - expected[weight]).norm() / expected[weight].norm() > 1e-4


def test_layout_orders_paragraphs_by_length_and_packs_memory_in_grid_order():
    mask = torch.tensor([
        [[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]],
        [[0, 1, 1, 0], [1, 1, 1, 1], [1, 1, 0, 0]],
    ], dtype=torch.bool)  # (2, 3, 4): an empty paragraph, a hole at column 0
    layout = PackedGrid.from_mask(mask)
    B, P, T = mask.shape
    assert layout.n_rows == int(mask.sum()) and layout.n_paragraphs == 5
    # grid paragraphs b*P+p by length, ties in grid order: 1 (1 token), 3 and 5 (2), 0 (3), 4 (4)
    assert layout.paragraph_grid_index.tolist() == [1, 3, 5, 0, 4]
    assert layout.real_paragraphs.tolist() == [[True, True, False], [True, True, True]]
    assert layout.token_position.tolist() == [0, 1, 2, 0, 1, 0, 1, 2, 0, 1, 2, 3]
    assert layout.paragraph_position.tolist() == [1, 0, 0, 2, 2, 0, 0, 0, 1, 1, 1, 1]
    # every paragraph fits the first width (8): one bucket of the 5 paragraphs, packed rows gathered in order
    (bucket,) = layout.buckets
    assert tuple(bucket.gather_index.shape) == (5, 8)
    assert bucket.gather_index[:, 0].tolist() == [0, 1, 3, 5, 8]  # first row of each paragraph
    assert bucket.attn_mask.view(5, 8).sum(-1).tolist() == [1, 2, 2, 3, 4]
    assert layout.bucket_row_index.tolist() == [0, 8, 9, 16, 17, 24, 25, 26, 32, 33, 34, 35]
    states = torch.randn(B, P, T, 3)
    rows = states.view(B * P * T, 3)[layout.grid_index]  # (N, 3)
    memory, memory_mask = pack_real_tokens(states, mask)
    assert torch.equal(layout.scatter_to_memory(rows), memory)
    assert torch.equal(layout.memory_mask, memory_mask)
    assert torch.equal(layout.scatter_to_grid(rows)[mask], states[mask])
    assert (layout.scatter_to_grid(rows)[~mask] == 0).all()


def test_layout_of_a_batch_without_real_tokens():
    mask = torch.zeros(2, 3, 4, dtype=torch.bool)
    layout = PackedGrid.from_mask(mask)
    assert layout.n_rows == 0 and layout.buckets == () and layout.bucket_row_index.numel() == 0
    assert layout.memory_mask.shape == (2, 1) and not layout.memory_mask.any()
    model = make_model()
    out = model.encode(torch.full((2, 3, 4), PAD), mask)
    assert out.memory.shape == (2, 1, 32) and (out.memory == 0).all()


def test_layout_refuses_a_mask_that_is_not_bool_bpt():
    with pytest.raises(ValueError, match=r"bool \[B, P, T\]"):
        PackedGrid.from_mask(torch.ones(2, 3, 4))


def test_buckets_take_every_width_of_the_ladder_up_to_the_widest_with_placeholders():
    """The bucket shapes depend only on the widest paragraph's width class (what bounds the graphs a
    compiled layer sees): every width up to it has a bucket of at least MIN_BUCKET_PARAGRAPHS paragraphs,
    placeholders give no row, and the rows come back in packed order."""
    lengths = torch.tensor([[13, 3, 0], [2, 13, 14]])  # widths 16, 8, -, 8, 16, 16
    mask = torch.arange(16) < lengths.unsqueeze(-1)  # (2, 3, 16)
    layout = PackedGrid.from_mask(mask)
    widths = [bucket.gather_index.size(1) for bucket in layout.buckets]
    assert widths == [width for width in BUCKET_WIDTHS if width <= 16] == [8, 12, 16]
    assert [bucket.gather_index.size(0) for bucket in layout.buckets] == [2, MIN_BUCKET_PARAGRAPHS, 3]
    assert layout.buckets[1].attn_mask.view(2, 12).sum(-1).tolist() == [1, 1]  # placeholders: one key each
    flat = torch.cat([bucket.gather_index.reshape(-1) for bucket in layout.buckets])
    assert torch.equal(flat[layout.bucket_row_index], torch.arange(layout.n_rows))
    assert [bucket_width(n) for n in (1, 8, 9, 12, 13, 100, 10**6)] == [8, 8, 12, 12, 16, 128, 10**6]


def test_a_layout_moves_to_a_device_whole():
    layout = PackedGrid.from_mask(ragged_batch(0)[1]).to("meta")
    assert layout.grid_index.device.type == "meta" and layout.bucket_row_index.device.type == "meta"
    assert all(bucket.gather_index.is_meta and bucket.attn_mask.is_meta for bucket in layout.buckets)


def attend_buckets_gathered_one_by_one(attention: MultiHeadAttention, x: torch.Tensor, layout: PackedGrid):
    """:meth:`MultiHeadAttention.self_attend_buckets` as it was before :func:`bucket_rows`: one gather per bucket."""
    N, D = x.shape
    H, E = attention.heads, D // attention.heads
    qkv = F.linear(x, *attention.stacked_query_key_value())
    contexts = []
    for bucket in layout.buckets:
        n, W = bucket.gather_index.shape
        q, k, v = qkv.index_select(0, bucket.gather_index.view(-1)).view(n, W, 3, H, E).permute(2, 0, 3, 1, 4).unbind(0)
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=bucket.attn_mask)
        contexts.append(context.transpose(1, 2).reshape(n * W, D))
    return attention.out(torch.cat(contexts).index_select(0, layout.bucket_row_index))


@pytest.mark.parametrize("seed", [0, 1])
def test_one_gather_for_all_buckets_gives_the_gradients_of_a_gather_per_bucket_to_the_bit(seed):
    """bucket_rows gathers the rows of every bucket at once: the same outputs and, because the padding places that
    also read a row get exact zeros, the same gradients as a gather per bucket, bit for bit (placeholders included:
    widths 8 and 12 hold fewer than MIN_BUCKET_PARAGRAPHS paragraphs)."""
    torch.manual_seed(seed)
    lengths = torch.tensor([[40, 3, 0, 17], [64, 9, 30, 25], [2, 50, 63, 33]])
    layout = PackedGrid.from_mask(torch.arange(64) < lengths.unsqueeze(-1))
    attention = MultiHeadAttention(32, heads=4, dropout=0.0)
    x = torch.randn(layout.n_rows, 32)
    upstream = torch.randn(layout.n_rows, 32)
    results = []
    def one_by_one(x, layout):
        return attend_buckets_gathered_one_by_one(attention, x, layout)

    for attend in (attention.self_attend_buckets, one_by_one):
        attention.zero_grad()
        given = x.clone().requires_grad_()
        out = attend(given, layout)
        (out * upstream).sum().backward()
        results.append((out.detach(), given.grad, [p.grad.clone() for p in attention.parameters()]))
    (out, grad, params), (out_ref, grad_ref, params_ref) = results
    assert torch.equal(out, out_ref) and torch.equal(grad, grad_ref)
    assert all(torch.equal(a, b) for a, b in zip(params, params_ref, strict=True))
    assert grad.abs().sum() > 0 and len(layout.buckets) == 7
