"""HierSumModule with the extensions: pooling penalty in the training loss, graphs and flat batches."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from hiersum.config import DataConfig, ModelConfig, OptimConfig
from hiersum.data.batching import collate
from hiersum.data.graph import similarity_graph
from hiersum.data.schema import EncodedExample
from hiersum.data.tokenizer import train_tokenizer
from hiersum.model.encoders import batch_layout
from hiersum.model.pooling import pooling_penalty
from hiersum.training.module import HierSumModule, module_hparams

TINY = ModelConfig(d_model=16, heads=2, ff_size=32, encoder_layers=2, inter_layers=[1], inter_heads=2,
                   decoder_layers=1, dropout=0.0)
TEXTS = ["alpha beta", "gamma delta epsilon", "zeta alpha"]


def module_and_batch(model: ModelConfig):
    tokenizer = train_tokenizer(["alpha beta gamma delta.", "beta gamma epsilon zeta."] * 10, vocab_size=60)
    torch.manual_seed(0)
    module = HierSumModule(**module_hparams(model, OptimConfig(), DataConfig(path="x"), tokenizer))
    ids = tokenizer.encode_batch(TEXTS)
    graph = similarity_graph(TEXTS[:2]) if model.graph != "none" else None
    examples = [
        EncodedExample(id="a", paragraphs=ids[:2], target=ids[2], references=["z"], provenance=[], graph=graph),
        EncodedExample(id="b", paragraphs=[ids[2]], target=ids[0], references=["x"], provenance=[],
                       graph=[[0.0]] if graph else None),
    ]
    special = tokenizer.special
    batch = collate(examples, pad_id=special.pad, bos_id=special.bos, eos_id=special.eos,
                    flat=batch_layout(model, tokenizer))
    logged = {}
    module.log = lambda name, value, **kwargs: logged.__setitem__(name, value)
    return module, batch, logged


def test_training_step_adds_the_weighted_pooling_penalty_and_logs_it():
    module, batch, logged = module_and_batch(replace(TINY, pooling_penalty=0.5))
    total = module.training_step(batch, 0)
    nll, _, _ = module.loss(batch)
    encoded = module.model.encode(batch.src, batch.src_mask, return_attention=True)
    penalty = pooling_penalty(encoded.pooling_weights, batch.src_mask)
    assert penalty.item() > 0
    assert total.item() == pytest.approx(nll.item() + 0.5 * penalty.item(), rel=1e-5)
    assert float(logged["train/loss"].detach()) == pytest.approx(nll.item(), rel=1e-5)
    assert float(logged["train/pooling_penalty"].detach()) == pytest.approx(penalty.item(), rel=1e-5)


def test_without_penalty_the_loss_is_the_nll_only():
    module, batch, logged = module_and_batch(TINY)
    assert module.training_step(batch, 0).item() == pytest.approx(module.loss(batch)[0].item())
    assert "train/pooling_penalty" not in logged


@pytest.mark.parametrize("model", [replace(TINY, graph="similarity"),
                                   replace(TINY, encoder="flat", inter_layers=[])], ids=["graph", "flat"])
def test_training_and_validation_steps_run_on_graph_and_flat_batches(model):
    module, batch, logged = module_and_batch(model)
    assert (batch.paragraph_graph is not None) == (model.graph != "none")
    assert batch.src.dim() == (2 if model.encoder == "flat" else 3)
    loss = module.training_step(batch, 0)
    loss.backward()
    module.validation_step(batch, 0)
    assert torch.isfinite(loss) and "val/loss" in logged
