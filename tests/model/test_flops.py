"""The FLOPs of a training step counted on the real tokens (:mod:`hiersum.model.flops`) agree with
``FlopCounterMode`` on a batch without padding, and padding does not count; the peaks MFU divides by: a GPU's
data sheet, a CPU's roof measured once and cached with the machine's name and the date."""

from __future__ import annotations

import datetime
import json
import platform

import pytest
import torch
import torch.nn.functional as F

from hiersum.model import flops
from hiersum.model.flops import (
    ROOF_FILE_VARIABLE,
    RoofMeasurement,
    cpu_roof,
    device_peak,
    flop_counter,
    measure_matmul_roof,
    peak_flops,
    roof_matrix_size,
    training_flops,
)
from hiersum.model.summarizer import HierSum
from tests.helpers.config import tiny_model_config

VOCAB = 97


def counted_step(model: HierSum, src: torch.Tensor, src_mask: torch.Tensor, tgt: torch.Tensor) -> int:
    """What FlopCounterMode counts of one forward and backward pass of the loss."""
    with flop_counter() as counter:
        logits = model(src, src_mask, tgt).logits
        F.cross_entropy(logits.flatten(0, 1), tgt.flatten()).backward()
    return counter.get_total_flops()


@pytest.mark.parametrize("changes", [{}, {"inter_layers": [1], "decoder_layers": 1, "ff_size": 48},
                                     {"copy_attention": True}])
def test_the_count_agrees_with_the_flop_counter_without_padding(changes):
    config = tiny_model_config(**changes)
    torch.manual_seed(0)
    model = HierSum(config, vocab_size=VOCAB, pad_id=0, bos_id=1, eos_id=2)
    src = torch.randint(3, VOCAB, (2, 3, 7))  # (B, P, T), every token real
    tgt = torch.randint(3, VOCAB, (2, 5))  # (B, S)
    src_mask, tgt_mask = torch.ones_like(src, dtype=torch.bool), torch.ones_like(tgt, dtype=torch.bool)
    counted = counted_step(model, src, src_mask, tgt)
    estimate = training_flops(model, src_mask, tgt_mask)
    assert estimate == pytest.approx(counted, rel=0.05)


def test_padding_adds_no_flops_and_real_tokens_do():
    model = HierSum(tiny_model_config(), vocab_size=VOCAB, pad_id=0, bos_id=1, eos_id=2)
    forward_flops = model.forward_flops
    mask = torch.ones(2, 3, 7, dtype=torch.bool)
    target = torch.ones(2, 5, dtype=torch.bool)
    padded = torch.cat([mask, torch.zeros(2, 3, 4, dtype=torch.bool)], dim=-1)  # 4 padding tokens a paragraph
    extra_paragraph = torch.cat([mask, torch.zeros(2, 1, 7, dtype=torch.bool)], dim=1)  # an empty paragraph
    base = forward_flops(mask, target)
    assert forward_flops(padded, target) == base
    padded_target = torch.cat([target, torch.zeros(2, 3, dtype=torch.bool)], 1)
    assert forward_flops(extra_paragraph, padded_target) == base
    assert forward_flops(mask, torch.ones(2, 6, dtype=torch.bool)) > base
    flat = HierSum(tiny_model_config(encoder="flat", inter_layers=[]), vocab_size=VOCAB, pad_id=0, bos_id=1, eos_id=2)
    assert training_flops(flat, mask.flatten(1), target) is None


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
    if tflops is not None:
        assert device_peak("cuda", dtype).source.startswith(f"data sheet: {name}, ")


def test_a_given_peak_wins_and_a_cpu_peak_is_measured():
    assert peak_flops("cuda", torch.bfloat16, override_tflops=123.0) == pytest.approx(123e12)
    assert peak_flops("cpu", torch.float32) > 1e9  # this machine's fp32 roof (the session's cache): > 1 GFLOP/s


def test_a_roof_measurement_times_each_round_and_its_spread_compares_them():
    measured = measure_matmul_roof("cpu", size=128, rounds=3, seconds=0.05)
    assert len(measured.rounds) == 3 and all(value > 0.1 for value in measured.rounds)  # GFLOP/s
    assert measured.gflops == max(measured.rounds) and 0 <= measured.spread < 1
    assert RoofMeasurement([100.0, 80.0, 90.0]).spread == pytest.approx(0.2)


def test_the_roof_is_measured_on_products_that_fit_a_third_of_a_round():
    # the product's time grows with the cube of the size: a [256, 256] product of 26 ms (bf16 on a CPU without
    # bf16 matrix instructions) predicts 13.3 s at 2048, 1.7 s at 1024 and 0.21 s at 512: rounds of 2 s take 512
    assert roof_matrix_size(0.026, 2048, 2.0) == 512
    assert roof_matrix_size(0.0006, 2048, 2.0) == 2048  # fp32 there: 0.31 s predicted, measured at full size
    assert roof_matrix_size(0.0006, 2048, 0.2) == 1024  # shorter rounds, smaller products
    assert roof_matrix_size(5.0, 2048, 2.0) == 256 and roof_matrix_size(5.0, 128, 2.0) == 128  # never under the probe


def test_a_slow_dtype_is_measured_at_the_size_its_probe_allows(monkeypatch):
    timed = []

    def product_seconds(a, b, device):  # a slow machine: 5 ms for [256, 256], growing as the cube of the size
        timed.append(a.shape[0])
        return 0.005 * (a.shape[0] / 256) ** 3

    monkeypatch.setattr(flops, "_product_seconds", product_seconds)
    measured = measure_matmul_roof("cpu", rounds=2, seconds=0.2)  # 40 ms predicted at 512, 320 ms at 1024
    assert timed[:2] == [256, 256] and set(timed[2:]) == {512}  # 2 probes, then the rounds' products at 512
    assert measured.rounds == pytest.approx([2 * 512**3 / 0.04 / 1e9] * 2)


def test_a_roof_measurement_draws_no_number_from_the_global_generator():
    # a run that measures the roof (the first on a machine) and one that reads it from the cache must draw the
    # same dropout after seeding: the exact-resume and dead-worker tests compare such runs bit for bit
    torch.manual_seed(7)
    before = torch.get_rng_state()
    measure_matmul_roof("cpu", size=64, rounds=1, seconds=0.01)
    assert torch.equal(torch.get_rng_state(), before)


def test_the_cpu_roof_is_measured_once_per_machine_and_cached_with_its_name_and_date(tmp_path, monkeypatch):
    path = tmp_path / "roof.json"
    monkeypatch.setenv(ROOF_FILE_VARIABLE, str(path))
    calls = []

    def measure(device, *, dtype):  # the figures of a measurement; the caching is under test
        calls.append(dtype)
        return RoofMeasurement([100.0 + len(calls), 90.0])

    monkeypatch.setattr(flops, "measure_matmul_roof", measure)
    first = cpu_roof(torch.float32)
    assert first.flops == pytest.approx(101e9) and len(calls) == 1
    assert platform.node() in first.source and datetime.date.today().isoformat() in first.source
    assert str(path) in first.source and f"{torch.get_num_threads()} threads" in first.source
    assert cpu_roof(torch.float32) == first and len(calls) == 1  # read from the cache
    assert peak_flops("cpu", torch.float32) == pytest.approx(101e9) and len(calls) == 1
    (entry,) = json.loads(path.read_text()).values()
    assert entry["rounds"] == [101.0, 90.0] and entry["spread"] == pytest.approx(0.109, abs=1e-3)
    assert cpu_roof(torch.bfloat16).flops == pytest.approx(102e9)  # another dtype, another entry
    assert cpu_roof(torch.float32, remeasure=True).flops == pytest.approx(103e9)
    assert cpu_roof(torch.float32).flops == pytest.approx(103e9) and len(calls) == 3
    path.write_text("{not json")  # a damaged cache is measured again
    assert cpu_roof(torch.float32).flops == pytest.approx(104e9)


def test_each_contract_names_its_flop_counting_capability_once():
    """``EncoderCountsFlops`` and ``DecoderCountsFlops``: two signatures, two names (both were ``CountsFlops``)."""
    from hiersum.model import decoder_contract, encoder_contract

    assert encoder_contract.EncoderCountsFlops is not decoder_contract.DecoderCountsFlops
    assert not hasattr(encoder_contract, "CountsFlops") and not hasattr(decoder_contract, "CountsFlops")
