"""Tiny models and ragged batches shared by the model, decoding and checkpoint tests."""

from __future__ import annotations

import torch

from hiersum.config import ModelConfig
from hiersum.model import HierSum
from tests.conftest import tiny_model_config

VOCAB, PAD, BOS, EOS = 64, 6, 4, 5


def tiny_config(**overrides) -> ModelConfig:
    """The suite's tiny model (``conf/model/tiny.yaml``, :func:`tests.conftest.tiny_model_config`) made
    wide and deep enough for the model tests: 4 heads, two inter-paragraph layers, a 2-layer decoder."""
    sizes = dict(
        d_model=32,
        heads=4,
        ff_size=64,
        encoder_layers=3,
        inter_layers=[1, 2],
        inter_heads=4,
        decoder_layers=2,
        max_positions=128,
    )
    sizes.update(overrides)
    return tiny_model_config(**sizes)


def make_model(seed: int = 0, **overrides) -> HierSum:
    torch.manual_seed(seed)
    return HierSum(
        tiny_config(**overrides), vocab_size=VOCAB, pad_id=PAD, bos_id=BOS, eos_id=EOS
    ).eval()


def make_batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """src [3, 4, 6] with ragged and empty paragraphs, its mask, tgt_in [3, 7] padded at the end."""
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(7, VOCAB, (3, 4, 6), generator=generator)
    lengths = torch.tensor([[6, 3, 0, 5], [2, 6, 6, 1], [4, 0, 0, 0]])  # tokens per paragraph
    mask = torch.arange(6) < lengths.unsqueeze(-1)
    src = src.masked_fill(~mask, PAD)
    tgt = torch.randint(7, VOCAB, (3, 7), generator=generator)
    tgt[:, 0] = BOS
    tgt[1, 5:] = PAD
    tgt[2, 3:] = PAD
    return src, mask, tgt
