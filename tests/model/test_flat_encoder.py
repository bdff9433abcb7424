"""The flat baseline encoder (``model.encoder=flat``): one token sequence [B, L] per example."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from tests.helpers.model import PAD, make_batch, make_flat_batch, make_model


def test_flat_model_shapes_and_padding_invariance(device):
    model = make_model(encoder="flat", inter_layers=[], device=device)
    src, mask, tgt = make_flat_batch(device=device)
    out = model.encode(src, mask)
    assert out.token_states.shape == (3, 12, 32)
    assert torch.equal(out.memory_mask, mask) and out.memory[~mask].abs().sum() == 0
    longer = F.pad(src, (0, 3), value=PAD)
    real_tgt = tgt.ne(PAD)
    with torch.no_grad():
        assert_close(
            model(longer, longer.ne(PAD), tgt).log_probs[real_tgt], model(src, mask, tgt).log_probs[real_tgt],
            atol=1e-5, rtol=0,
        )
    with pytest.raises(ValueError, match=r"\[B, L\]"):
        model.encode(*make_batch(device=device)[:2])


def test_flat_config_refuses_hierarchical_options(device):
    with pytest.raises(ValueError, match="flat"):
        make_model(encoder="flat", device=device)  # inter_layers [1, 2] in the tiny config
    with pytest.raises(ValueError, match="model.graph"):
        make_model(graph="pagerank", device=device)
