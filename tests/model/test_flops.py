"""The FLOPs of a training step counted on the real tokens (:mod:`hiersum.model.flops`) agree with
``FlopCounterMode`` on a batch without padding, and padding does not count."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from hiersum.model.flops import flop_counter, forward_flops, peak_flops, training_flops
from hiersum.model.summarizer import HierSum
from tests.helpers.config import tiny_model_config

VOCAB = 97


def counted_step(model: HierSum, src: torch.Tensor, src_mask: torch.Tensor, tgt: torch.Tensor) -> int:
    """What FlopCounterMode counts of one forward and backward pass of the loss."""
    with flop_counter() as counter:
        logits = model.logits(src, src_mask, tgt)
        F.cross_entropy(logits.flatten(0, 1), tgt.flatten()).backward()
    return counter.get_total_flops()


@pytest.mark.parametrize("changes", [{}, {"inter_layers": [1], "decoder_layers": 1, "ff_size": 48}])
def test_the_count_agrees_with_the_flop_counter_without_padding(changes):
    config = tiny_model_config(**changes)
    torch.manual_seed(0)
    model = HierSum(config, vocab_size=VOCAB, pad_id=0, bos_id=1, eos_id=2)
    src = torch.randint(3, VOCAB, (2, 3, 7))  # (B, P, T), every token real
    tgt = torch.randint(3, VOCAB, (2, 5))  # (B, S)
    src_mask, tgt_mask = torch.ones_like(src, dtype=torch.bool), torch.ones_like(tgt, dtype=torch.bool)
    counted = counted_step(model, src, src_mask, tgt)
    estimate = training_flops(config, VOCAB, src_mask, tgt_mask)
    assert estimate == pytest.approx(counted, rel=0.05)


def test_padding_adds_no_flops_and_real_tokens_do():
    config = tiny_model_config()
    mask = torch.ones(2, 3, 7, dtype=torch.bool)
    target = torch.ones(2, 5, dtype=torch.bool)
    padded = torch.cat([mask, torch.zeros(2, 3, 4, dtype=torch.bool)], dim=-1)  # 4 padding tokens a paragraph
    extra_paragraph = torch.cat([mask, torch.zeros(2, 1, 7, dtype=torch.bool)], dim=1)  # an empty paragraph
    base = forward_flops(config, VOCAB, mask, target)
    assert forward_flops(config, VOCAB, padded, target) == base
    padded_target = torch.cat([target, torch.zeros(2, 3, dtype=torch.bool)], 1)
    assert forward_flops(config, VOCAB, extra_paragraph, padded_target) == base
    assert forward_flops(config, VOCAB, mask, torch.ones(2, 6, dtype=torch.bool)) > base
    assert training_flops(tiny_model_config(encoder="flat"), VOCAB, mask.flatten(1), target) is None


@pytest.mark.parametrize(("name", "dtype", "precision", "tflops"), [
    ("NVIDIA H100 80GB HBM3", torch.bfloat16, "highest", 989.4),  # the SXM part
    ("NVIDIA H100 PCIe", torch.bfloat16, "highest", 756.5),
    ("NVIDIA H200", torch.float32, "highest", 66.9),  # no tensor cores for fp32 at "highest"
    ("NVIDIA H200", torch.float32, "high", 494.7),  # tf32 otherwise
    ("NVIDIA A100-SXM4-80GB", torch.bfloat16, "highest", 312.0),
    ("NVIDIA L40S", torch.bfloat16, "highest", 362.1),
    ("NVIDIA L4", torch.bfloat16, "highest", 121.0),
    ("Tesla V100-SXM2-16GB", torch.bfloat16, "highest", None),  # no bf16 tensor cores
    ("Some Future GPU", torch.bfloat16, "highest", None),
])
def test_the_gpu_peak_comes_from_the_data_sheet_table(name, dtype, precision, tflops, monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
    monkeypatch.setattr(torch, "get_float32_matmul_precision", lambda: precision)
    peak = peak_flops("cuda", dtype)
    assert peak == (None if tflops is None else pytest.approx(tflops * 1e12))


def test_a_given_peak_wins_and_a_cpu_peak_is_measured():
    assert peak_flops("cuda", torch.bfloat16, override_tflops=123.0) == pytest.approx(123e12)
    assert peak_flops("cpu", torch.float32) > 1e9  # this machine's fp32 roof: more than a GFLOP/s
