"""hiersum on a CUDA GPU (``make gpu-check`` runs the suite there): a training step in fp32 and bf16-mixed, a
beam search that gives the CPU's tokens, the compiled model against eager, and a tiny ``hiersum train`` run with
``trainer=gpu``, compiled. Skipped on a machine without CUDA (CI, the development machine)."""

from __future__ import annotations

import copy
import csv

import pytest
import torch
import torch._dynamo
from torch.testing import assert_close

from hiersum.commands.train import train
from hiersum.data.packing import PackedGrid
from hiersum.data.schema import IGNORE_INDEX
from hiersum.decoding.generation import GenerationOptions, generate
from hiersum.training.module import label_smoothed_nll
from tests.helpers.model import PAD, make_model
from tests.model.test_packed_encoder import ragged_batch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")
CUDA = torch.device("cuda")


def cuda_batch(seed: int = 0):
    src, mask, tgt = ragged_batch(seed, B=4, P=5, T=12)
    layout = PackedGrid.from_mask(mask, widest=12)
    labels = tgt.roll(-1, 1).masked_fill(tgt.eq(PAD), IGNORE_INDEX)
    return src.to(CUDA), mask.to(CUDA), tgt.to(CUDA), labels.to(CUDA), layout.to(CUDA)


@pytest.mark.parametrize("dtype", [None, torch.bfloat16], ids=["fp32", "bf16-mixed"])
def test_a_training_step_runs_on_cuda(dtype):
    model = make_model().train().to(CUDA)
    src, mask, tgt, labels, layout = cuda_batch()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    before = copy.deepcopy(model.state_dict())
    with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None):
        loss = label_smoothed_nll(model(src, mask, tgt, layout=layout).logits, labels, 0.1)
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss) and loss.device.type == "cuda"
    assert any(not torch.equal(before[key], value) for key, value in model.state_dict().items())


def test_beam_search_on_cuda_gives_the_cpu_tokens():
    model = make_model()
    src, mask, _ = ragged_batch(1, B=4, P=5, T=12)
    options = GenerationOptions(beam_size=3, max_length=8, min_length=2)
    with torch.no_grad():
        expected = generate(model, src, mask, options).sequences
        got = generate(model.to(CUDA), src.to(CUDA), mask.to(CUDA), options).sequences
    assert got == expected


def test_the_compiled_model_matches_eager_on_cuda():
    torch._dynamo.reset()
    eager = make_model().to(CUDA)
    compiled = copy.deepcopy(eager)
    compiled.compile()
    src, mask, tgt, _, layout = cuda_batch(2)
    with torch.no_grad():
        assert_close(compiled(src, mask, tgt, layout=layout).logits, eager(src, mask, tgt, layout=layout).logits,
                     atol=1e-4, rtol=1e-4)


def test_a_tiny_compiled_run_trains_on_the_gpu_and_logs_its_mfu(tiny_cfg, tmp_path):
    metrics = train(tiny_cfg("trainer=gpu", "trainer.max_epochs=1", "trainer.log_every_n_steps=1", "compile=true",
                             "callbacks.throughput.window_size=2", "data.limit_eval_examples=2", "logger=csv"))
    assert metrics["test"]["model"]["perplexity"] > 1.0
    with open(tmp_path / "run" / "csv" / "metrics.csv", newline="") as handle:
        mfu = [float(row["train/device/mfu"]) for row in csv.DictReader(handle) if row.get("train/device/mfu")]
    assert mfu and all(0 < value < 1 for value in mfu)  # against the GPU's data-sheet peak
