"""Graph-informed inter-paragraph attention (``model.graph``): a learned bias w_h * G on the scores."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from tests.helpers.model import PAD, make_model, random_graph


def graph_model(device: torch.device, kind: str = "similarity"):
    """A graph model with the same weights as ``make_model()`` (plus its graph weights), on ``device``."""
    model = make_model(graph=kind, device=device)
    missing, unexpected = model.load_state_dict(make_model(device=device).state_dict(), strict=False)
    assert unexpected == [] and all(key.endswith("graph_weight") for key in missing)
    return model


def test_graph_none_adds_no_parameter_and_ignores_a_graph(model, batch):
    src, mask, tgt = batch
    assert not any("graph" in key for key in model.state_dict())
    with torch.no_grad():
        with_graph = model(src, mask, tgt, paragraph_graph=random_graph(mask)).log_probs
        assert_close(with_graph, model(src, mask, tgt).log_probs)


def test_graph_bias_changes_the_inter_attention(batch, device):
    src, mask, tgt = batch
    model, plain = graph_model(device), make_model(device=device)
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


def test_graph_edges_of_empty_paragraphs_change_nothing(batch, device):
    src, mask, tgt = batch
    model = graph_model(device)
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
            model(src, mask, tgt, paragraph_graph=touched).log_probs[real_tgt],
            model(src, mask, tgt, paragraph_graph=graph).log_probs[real_tgt],
        )


def test_graph_model_requires_a_graph_of_the_right_shape(batch, device):
    src, mask, tgt = batch
    model = graph_model(device, "discourse")
    with pytest.raises(ValueError, match="paragraph_graph"):
        model(src, mask, tgt)
    with pytest.raises(ValueError, match=r"\(3, 4, 4\)"):
        model.encode(src, mask, paragraph_graph=torch.zeros(3, 5, 5, device=device))


def test_graph_weight_is_learned(batch, device):
    src, mask, tgt = batch
    model = graph_model(device).train()
    model(src, mask, tgt, paragraph_graph=random_graph(mask)).log_probs.sum().backward()
    grad = model.encoder.layers[1].graph_weight.grad
    assert grad is not None and grad.abs().sum() > 0


