"""The encoder registry: a new encoder is one ``register_encoder`` call plus one ``conf/model`` YAML."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import Tensor, nn

from hiersum.config import ModelConfig
from hiersum.data.batching import SourceLayout
from hiersum.data.packing import PackedGrid
from hiersum.model.encoder import FlatEncoder, HierarchicalEncoder
from hiersum.model.encoder_contract import EncoderOutput
from hiersum.model.encoder_registry import (
    ENCODERS,
    EncoderSpec,
    encoder_spec,
    register_encoder,
    source_layout,
    unregister_encoder,
    validate_choices,
)
from hiersum.model.summarizer import HierSum

BAG_YAML = """\
# A toy encoder for tests: each paragraph is the mean of its token embeddings.
defaults:
  - schema
encoder: bag
d_model: 16
heads: 2
ff_size: 32
encoder_layers: 1
inter_layers: []
inter_heads: 2
decoder_layers: 1
"""


class BagEncoder(nn.Module):
    """Grid [B, P, T] -> one memory vector per paragraph: the mean of its token embeddings, projected."""

    def __init__(self, config: ModelConfig, *, embeddings: nn.Embedding):
        super().__init__()
        self.embeddings = embeddings
        self.scale = math.sqrt(config.d_model)
        self.project = nn.Linear(config.d_model, config.d_model)
        self.layers = nn.ModuleList()  # no repeated block for HierSum.compile to compile

    def forward(self, src: Tensor, src_mask: Tensor, *, paragraph_graph: Tensor | None = None,
                return_attention: bool = False, layout: PackedGrid | None = None) -> EncoderOutput:
        token_states = self.embeddings(src) * self.scale * src_mask.unsqueeze(-1)  # (B, P, T, D)
        counts = src_mask.sum(-1, keepdim=True).clamp(min=1)  # (B, P, 1)
        paragraphs = self.project(token_states.sum(2) / counts)  # (B, P, D)
        memory_mask = src_mask.any(-1)  # (B, P)
        return EncoderOutput(token_states=token_states, memory=paragraphs * memory_mask.unsqueeze(-1),
                             memory_mask=memory_mask)


@pytest.fixture()
def bag_encoder(tmp_path: Path) -> Path:
    """``model.encoder=bag`` registered, and ``model=bag`` in a config folder on Hydra's search path."""
    register_encoder("bag", EncoderSpec(BagEncoder, source_layout=SourceLayout.GRID, description="toy bag"))
    conf = tmp_path / "plugin_conf"
    (conf / "model").mkdir(parents=True)
    (conf / "model" / "bag.yaml").write_text(BAG_YAML, encoding="utf-8")
    yield conf
    unregister_encoder("bag")


def test_builtin_encoders_declare_layout_attention_and_official_flag():
    assert ENCODERS["hierarchical"] == EncoderSpec(HierarchicalEncoder, SourceLayout.GRID, inter_paragraph=True,
                                                   official_hier=True, description=ENCODERS["hierarchical"].description)
    flat = encoder_spec("flat")
    assert (flat.cls, flat.source_layout, flat.inter_paragraph, flat.official_hier) == (
        FlatEncoder, SourceLayout.FLAT, False, False)
    assert source_layout(ModelConfig(encoder="flat", inter_layers=[])) is SourceLayout.FLAT


def test_unknown_encoder_is_refused_in_one_line_listing_the_registered_ones(tiny_cfg):
    with pytest.raises(ValueError, match=r"^model.encoder: unknown encoder 'rnn'; registered encoders: flat, "
                                         r"hierarchical, pretrained$"):
        HierSum(ModelConfig(encoder="rnn"), vocab_size=10, pad_id=0, bos_id=1, eos_id=2)
    cfg = tiny_cfg("model.encoder=rnn")
    with pytest.raises(ValueError, match="model.encoder: unknown encoder 'rnn'; registered encoders: flat, hier"):
        validate_choices(cfg)
    with pytest.raises(ValueError, match="already registered"):
        register_encoder("flat", encoder_spec("flat"))


def test_an_encoder_without_inter_paragraph_layers_refuses_their_options(bag_encoder):
    with pytest.raises(ValueError, match=r"model.encoder=bag has no inter-paragraph layers.*inter_layers=\[\]"):
        HierSum(ModelConfig(encoder="bag", inter_layers=[1]), vocab_size=10, pad_id=0, bos_id=1, eos_id=2)


def test_a_registered_encoder_trains_with_one_yaml(bag_encoder, tiny_cfg):
    from hiersum.commands.train import train

    cfg = tiny_cfg("model=bag", f"hydra.searchpath=[file://{bag_encoder}]", "debug=fast_dev_run", "callbacks=none",
                   "data.limit_eval_examples=2")
    assert cfg.model.encoder == "bag"
    torch.manual_seed(0)
    metrics = train(cfg)
    assert math.isfinite(metrics["validation_loss"])
    assert metrics["n_examples"] == 2 and metrics["test"]["model"]["perplexity"] > 1.0
