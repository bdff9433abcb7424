"""``model.attention_dropout``: the rate of the attention probabilities and pooling weights, apart from ``dropout``'s
(embeddings, residuals, feed-forward); None gives ``dropout``'s rate, the network of a single rate as before."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hiersum.model.layers import MultiHeadAttention
from hiersum.model.pooling import MultiHeadPooling
from tests.helpers.model import make_batch, make_flat_batch, make_model

ENCODERS = [{"encoder": "hierarchical"}, {"encoder": "flat", "inter_layers": []}]
BATCHES = {"hierarchical": make_batch, "flat": make_flat_batch}


def train_forward(model, batch, seed: int) -> torch.Tensor:
    """The log-probabilities of ``batch`` in train mode, dropout's masks drawn from ``seed``."""
    torch.manual_seed(seed)
    return model.train()(*batch).log_probs


@pytest.mark.parametrize("encoder", ENCODERS, ids=lambda e: e["encoder"])
def test_none_is_the_dropout_rate(encoder):
    batch = BATCHES[encoder["encoder"]]()
    single = make_model(**encoder, dropout=0.2)
    given = make_model(**encoder, dropout=0.2, attention_dropout=0.2)
    assert torch.equal(train_forward(single, batch, seed=3), train_forward(given, batch, seed=3))


@pytest.mark.parametrize("encoder", ENCODERS, ids=lambda e: e["encoder"])
def test_each_rate_reaches_its_modules(encoder):
    model = make_model(**encoder, dropout=0.1, attention_dropout=0.0, copy_attention=True)
    attention = [m.dropout for m in model.modules() if isinstance(m, MultiHeadAttention)]
    pooling = [m.dropout for m in model.modules() if isinstance(m, MultiHeadPooling)]
    others = [m.p for m in model.modules() if isinstance(m, nn.Dropout) and all(m is not d for d in pooling)]
    assert attention and set(attention) == {0.0}
    assert {d.p for d in pooling} == ({0.0} if encoder["encoder"] == "hierarchical" else set())
    assert others and set(others) == {0.1}  # embeddings, residuals, feed-forward blocks


@pytest.mark.parametrize("encoder", ENCODERS, ids=lambda e: e["encoder"])
def test_attention_dropout_alone_draws_masks(encoder):
    batch = BATCHES[encoder["encoder"]]()
    still = make_model(**encoder, dropout=0.0, attention_dropout=0.0)
    assert torch.equal(train_forward(still, batch, seed=1), train_forward(still, batch, seed=2))
    dropped = make_model(**encoder, dropout=0.0, attention_dropout=0.5)
    first, second = train_forward(dropped, batch, seed=1), train_forward(dropped, batch, seed=2)
    assert not torch.allclose(first, second)
    assert torch.equal(first, train_forward(dropped, batch, seed=1))
    assert torch.equal(dropped.eval()(*batch).log_probs, still.eval()(*batch).log_probs)  # the same weights
