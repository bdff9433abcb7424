"""HierSumModule: the loss, the pooling penalty in the training loss, steps on graph and flat batches."""

from __future__ import annotations

import pytest
import torch

from hiersum.config import OptimConfig
from hiersum.data.extended_vocabulary import hide_copied_words
from hiersum.model.pooling import pooling_penalty
from tests.helpers.config import tiny_model_config
from tests.helpers.training import module_and_batch


def test_loss_is_mean_nll_over_real_target_tokens(device):
    module, batch, _ = module_and_batch(device=device)
    loss, logits, n_tokens = module.loss(batch)
    assert n_tokens == int(batch.tgt_mask.sum())
    log_probs = module.model(batch.src, batch.src_mask, batch.tgt_in).log_probs  # (B, S, V)
    torch.testing.assert_close(logits.log_softmax(-1), log_probs)
    picked = log_probs.gather(-1, batch.tgt_out.unsqueeze(-1)).squeeze(-1)  # (B, S)
    assert loss.item() == pytest.approx(-(picked[batch.tgt_mask]).mean().item(), rel=1e-5)


def test_label_smoothing_mixes_the_nll_with_the_mean_over_the_vocabulary(device):
    smoothing = 0.1
    module, batch, _ = module_and_batch(optim=OptimConfig(label_smoothing=smoothing), device=device)
    loss, _, _ = module.loss(batch)
    log_probs = module.model(batch.src, batch.src_mask, batch.tgt_in).log_probs[batch.tgt_mask]  # (real, V)
    nll = -log_probs.gather(-1, batch.tgt_out[batch.tgt_mask].unsqueeze(-1)).squeeze(-1)  # (real,)
    expected = ((1 - smoothing) * nll - smoothing * log_probs.mean(-1)).mean()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert loss.item() != pytest.approx(nll.mean().item(), rel=1e-3)  # the smoothing term counts


def test_training_step_adds_the_weighted_pooling_penalty_and_logs_it(device):
    module, batch, logged = module_and_batch(tiny_model_config(pooling_penalty=0.5), OptimConfig(), device=device)
    total = module.training_step(batch, 0)
    nll, _, _ = module.loss(batch)
    encoded = module.model.encode(batch.src, batch.src_mask, return_attention=True)
    penalty = pooling_penalty(encoded.pooling_weights, batch.src_mask)
    assert penalty.item() > 0
    assert total.item() == pytest.approx(nll.item() + 0.5 * penalty.item(), rel=1e-5)
    assert float(logged["train/loss"].detach()) == pytest.approx(nll.item(), rel=1e-5)
    assert float(logged["train/pooling_penalty"].detach()) == pytest.approx(penalty.item(), rel=1e-5)


def test_training_step_adds_the_weighted_coverage_loss_and_logs_it(device):
    model = tiny_model_config(copy_attention=True, coverage=True, coverage_loss_weight=0.5)
    module, batch, logged = module_and_batch(model, OptimConfig(), device=device)
    with torch.no_grad():
        module.model.copy_attention.coverage_weight.fill_(-1.0)
    total = module.training_step(batch, 0)
    nll, _, _ = module.loss(batch)
    out = module.model(batch.src, batch.src_mask, batch.tgt_in)
    coverage = out.copy.coverage_loss[batch.tgt_mask].mean()  # per real target token
    assert coverage.item() > 0
    assert total.item() == pytest.approx(nll.item() + 0.5 * coverage.item(), rel=1e-5)
    assert float(logged["train/coverage_loss"].detach()) == pytest.approx(coverage.item(), rel=1e-5)


def test_copy_oov_share_trains_on_the_batch_with_its_copied_words_hidden(device):
    """``optim.copy_oov_share=1``: every id in both an example's source and its target becomes an extended id, in
    the loss of the training step (and only there: ``module.loss`` of the batch is the plain one)."""
    model = tiny_model_config(copy_attention=True, copy_oov=True)
    module, batch, _ = module_and_batch(model, OptimConfig(label_smoothing=0.0, copy_oov_share=1.0), device=device)
    network = module.model
    hidden = hide_copied_words(batch, share=1.0, vocab_size=network.vocab_size, kept_ids=network.special_ids)
    assert hidden.tgt_out.ge(network.vocab_size).any() and hidden.src.ge(network.vocab_size).any()  # the guard
    total = module.training_step(batch, 0)
    assert total.item() == pytest.approx(module.loss(hidden)[0].item(), rel=1e-5)
    assert total.item() != pytest.approx(module.loss(batch)[0].item(), rel=1e-3)
    with pytest.raises(ValueError, match="set model.copy_oov=true or optim.copy_oov_share=0"):
        module_and_batch(tiny_model_config(copy_attention=True), OptimConfig(copy_oov_share=0.1))


def test_without_penalty_the_loss_is_the_nll_only(device):
    module, batch, logged = module_and_batch(optim=OptimConfig(), device=device)
    assert module.training_step(batch, 0).item() == pytest.approx(module.loss(batch)[0].item())
    assert "train/pooling_penalty" not in logged and "train/coverage_loss" not in logged


@pytest.mark.parametrize("changes", [{"graph": "similarity"}, {"encoder": "flat", "inter_layers": []}],
                         ids=["graph", "flat"])
def test_training_and_validation_steps_run_on_graph_and_flat_batches(changes, device):
    model = tiny_model_config(**changes)
    module, batch, logged = module_and_batch(model, OptimConfig(), device=device)
    assert (batch.paragraph_graph is not None) == (model.graph != "none")
    assert batch.src.dim() == (2 if model.encoder == "flat" else 3)
    loss = module.training_step(batch, 0)
    loss.backward()
    module.validation_step(batch, 0)
    assert torch.isfinite(loss) and "val/loss" in logged
