"""The flat baseline, graph-informed attention, the pooling penalty, copy attention and its coverage through
``train(cfg)`` of ``hiersum-train`` (in process): each run shows that its option acted, not only that it ran."""

from __future__ import annotations

import csv
import math

import pytest
import torch

from hiersum.commands.train import train
from tests.helpers.probes import probe_overrides, read_probes

pytestmark = pytest.mark.slow


def train_with(tiny_cfg, tmp_path, *options: str) -> tuple[dict, dict]:
    """(metrics, the probe's record) of a short run with ``options``, scoring 2 test examples."""
    cfg = tiny_cfg("callbacks=none", "data.limit_eval_examples=2", *probe_overrides(tmp_path / "probe"), *options)
    torch.manual_seed(0)
    metrics = train(cfg)
    assert metrics["n_examples"] == 2 and metrics["test"]["model"]["perplexity"] > 1.0
    return metrics, read_probes(tmp_path / "probe")[0]


def test_flat_encoder_trains_on_flat_batches(tiny_cfg, tmp_path):
    _, probe = train_with(tiny_cfg, tmp_path, "debug=fast_dev_run", "model=flat_tiny")
    assert probe["encoder"] == "FlatEncoder"
    assert len(probe["src_shape"]) == 2  # [B, L]: the paragraphs joined
    assert probe["graph_shape"] is None


@pytest.mark.parametrize("model", ["tiny", "flat_tiny"])
def test_copy_attention_trains_decodes_and_scores(model, tiny_cfg, tmp_path):
    metrics, probe = train_with(tiny_cfg, tmp_path, "debug=fast_dev_run", f"model={model}", "model.copy_attention=true")
    assert probe["copy_attention"] is True
    assert len(probe["src_shape"]) == (3 if model == "tiny" else 2)
    assert all(math.isfinite(value) for value in metrics["test"]["model"].values() if isinstance(value, float))


@pytest.mark.parametrize("graph", ["similarity", "discourse"])
def test_graph_reaches_the_batches_and_biases_the_inter_attention(graph, tiny_cfg, tmp_path):
    _, probe = train_with(tiny_cfg, tmp_path, "debug=fast_dev_run", f"model.graph={graph}")
    assert probe["encoder"] == "HierarchicalEncoder" and len(probe["src_shape"]) == 3
    batch_size, paragraphs = probe["src_shape"][:2]
    assert probe["graph_shape"] == [batch_size, paragraphs, paragraphs]
    assert probe["graph_effect"] > 1e-4  # the same batch without its graph is attended differently


def test_pooling_penalty_is_logged(tiny_cfg, tmp_path):
    train_with(tiny_cfg, tmp_path, "model.pooling_penalty=0.1", "trainer.max_epochs=1", "trainer.max_steps=2",
               "trainer.limit_val_batches=1", "trainer.log_every_n_steps=1", "trainer.num_sanity_val_steps=0")
    with open(tmp_path / "run" / "csv" / "metrics.csv", newline="") as handle:
        values = [float(row["train/pooling_penalty"]) for row in csv.DictReader(handle)
                  if row.get("train/pooling_penalty")]
    assert len(values) == 2 and all(math.isfinite(value) and value > 0 for value in values)


def test_coverage_trains_logs_its_loss_decodes_and_scores(tiny_cfg, tmp_path):
    metrics, probe = train_with(tiny_cfg, tmp_path, "model.copy_attention=true", "model.coverage=true",
                                "trainer.max_epochs=1", "trainer.max_steps=2", "trainer.limit_val_batches=1",
                                "trainer.log_every_n_steps=1", "trainer.num_sanity_val_steps=0")
    assert probe["copy_attention"] is True
    with open(tmp_path / "run" / "csv" / "metrics.csv", newline="") as handle:
        values = [float(row["train/coverage_loss"]) for row in csv.DictReader(handle) if row.get("train/coverage_loss")]
    assert len(values) == 2 and all(math.isfinite(value) and value > 0 for value in values)
    assert all(math.isfinite(value) for value in metrics["test"]["model"].values() if isinstance(value, float))
