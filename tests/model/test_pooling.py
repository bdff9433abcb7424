"""Options beyond the official computation: graph-informed inter-paragraph attention, the pooling
diversity penalty, and the flat baseline encoder."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from hiersum.model.pooling import pooling_penalty
from tests.model.model_testkit import PAD, make_batch, make_model


def random_graph(src_mask: torch.Tensor, seed: int = 0) -> torch.Tensor:
    """[B, P, P] symmetric weights in [0, 1], zero diagonal and zero at empty paragraphs."""
    generator = torch.Generator().manual_seed(seed)
    B, P, _ = src_mask.shape
    graph = torch.rand(B, P, P, generator=generator)
    graph = (graph + graph.transpose(1, 2)) / 2 * (1 - torch.eye(P))
    real = src_mask.any(-1).float()  # (B, P)
    return graph * real.unsqueeze(1) * real.unsqueeze(2)


def graph_model(kind: str = "similarity"):
    """A graph model with the same weights as ``make_model()`` (plus its graph weights)."""
    model = make_model(graph=kind)
    missing, unexpected = model.load_state_dict(make_model().state_dict(), strict=False)
    assert unexpected == [] and all(key.endswith("graph_weight") for key in missing)
    return model


def test_graph_none_adds_no_parameter_and_ignores_a_graph(model, batch):
    src, mask, tgt = batch
    assert not any("graph" in key for key in model.state_dict())
    with torch.no_grad():
        with_graph = model.log_probs(src, mask, tgt, paragraph_graph=random_graph(mask))
        assert_close(with_graph, model.log_probs(src, mask, tgt))


def test_graph_bias_changes_the_inter_attention(batch):
    src, mask, tgt = batch
    model, plain = graph_model(), make_model()
    graph = random_graph(mask)
    with torch.no_grad():
        biased = model.encode(src, mask, paragraph_graph=graph, return_attention=True)
        base = plain.encode(src, mask, return_attention=True)
        zero = model.encode(src, mask, paragraph_graph=torch.zeros_like(graph), return_attention=True)
    for got, expected in zip(zero.inter_attention, base.inter_attention, strict=True):
        assert_close(got, expected)  # an empty graph is no bias
    assert not torch.allclose(biased.inter_attention[0], base.inter_attention[0])
    # the bias is w_h * G on the scores: with w = 1 and G[i, j] large, j takes the attention of i
    strong = graph.clone()
    strong[0, 0, 3] = 50.0
    with torch.no_grad():
        attention = model.encode(src, mask, paragraph_graph=strong, return_attention=True).inter_attention[0]
    assert (attention[0, :, 0, 3] > 0.99).all()
    assert model.encoder.layers[1].graph_weight.shape == (4,)


def test_graph_edges_of_empty_paragraphs_change_nothing(batch):
    src, mask, tgt = batch
    model = graph_model()
    graph = random_graph(mask)
    touched = graph.clone()
    empty = ~mask.any(-1)  # (B, P): paragraph 2 of example 0, paragraphs 1-3 of example 2
    touched[empty] = 5.0  # rows of empty paragraphs
    touched.transpose(1, 2)[empty] = 5.0  # and edges into them
    real_tgt = tgt.ne(PAD)
    with torch.no_grad():
        base = model.encode(src, mask, paragraph_graph=graph)
        other = model.encode(src, mask, paragraph_graph=touched)
        assert_close(other.token_states[mask], base.token_states[mask])
        assert_close(
            model.log_probs(src, mask, tgt, paragraph_graph=touched)[real_tgt],
            model.log_probs(src, mask, tgt, paragraph_graph=graph)[real_tgt],
        )


def test_graph_model_requires_a_graph_of_the_right_shape(batch):
    src, mask, tgt = batch
    model = graph_model("discourse")
    with pytest.raises(ValueError, match="paragraph_graph"):
        model.log_probs(src, mask, tgt)
    with pytest.raises(ValueError, match=r"\(3, 4, 4\)"):
        model.encode(src, mask, paragraph_graph=torch.zeros(3, 5, 5))


def test_graph_weight_is_learned(batch):
    src, mask, tgt = batch
    model = graph_model().train()
    model.log_probs(src, mask, tgt, paragraph_graph=random_graph(mask)).sum().backward()
    grad = model.encoder.layers[1].graph_weight.grad
    assert grad is not None and grad.abs().sum() > 0


def test_pooling_penalty_values():
    mask = torch.tensor([[[True, True, True], [False, False, False]]])  # (1, 2, 3): one real, one empty paragraph
    distinct = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # two heads on different tokens
    weights = torch.zeros(1, 2, 2, 3)  # (B, P, H, T)
    weights[0, 0] = distinct
    weights[0, 1] = 1 / 3  # garbage in the empty paragraph must not count
    assert pooling_penalty([weights], mask).item() == pytest.approx(0.0)
    same = torch.zeros(1, 2, 2, 3)
    same[0, 0] = torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])  # both heads on one token: A A^T = ones
    assert pooling_penalty([same], mask).item() == pytest.approx(2.0)
    assert pooling_penalty([weights, same], mask).item() == pytest.approx(1.0)  # mean over layers
    assert pooling_penalty([], mask).item() == 0.0


def test_pooling_penalty_of_a_model_is_positive_and_differentiable(batch):
    src, mask, _ = batch
    model = make_model().train()
    encoded = model.encode(src, mask, return_attention=True)
    penalty = pooling_penalty(encoded.pooling_weights, mask)
    assert penalty.item() > 0
    penalty.backward()
    assert model.encoder.layers[1].pooling.score.weight.grad.abs().sum() > 0


def flat_batch():
    src, mask, tgt = make_batch()
    flat = torch.full((3, 12), PAD)
    flat_mask = torch.zeros(3, 12, dtype=torch.bool)
    for b, length in enumerate((12, 7, 4)):
        flat[b, :length] = src[b][mask[b]][:length]
        flat_mask[b, :length] = True
    return flat, flat_mask, tgt


def test_flat_model_shapes_and_padding_invariance():
    model = make_model(encoder="flat", inter_layers=[])
    src, mask, tgt = flat_batch()
    out = model.encode(src, mask)
    assert out.token_states.shape == (3, 12, 32)
    assert torch.equal(out.memory_mask, mask) and out.memory[~mask].abs().sum() == 0
    longer = F.pad(src, (0, 3), value=PAD)
    real_tgt = tgt.ne(PAD)
    with torch.no_grad():
        assert_close(
            model.log_probs(longer, longer.ne(PAD), tgt)[real_tgt], model.log_probs(src, mask, tgt)[real_tgt],
            atol=1e-5, rtol=0,
        )
    with pytest.raises(ValueError, match=r"\[B, L\]"):
        model.encode(*make_batch()[:2])


def test_flat_config_refuses_hierarchical_options():
    with pytest.raises(ValueError, match="flat"):
        make_model(encoder="flat")  # inter_layers [1, 2] in the tiny config
    with pytest.raises(ValueError, match="model.graph"):
        make_model(graph="pagerank")
