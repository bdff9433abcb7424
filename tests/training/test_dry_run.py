"""``hiersum train dry_run=true``: the memory of a training step, computed under FakeTensorMode with PyTorch's
MemTracker, without training: the weights and Adam's state it reports are those of the parameters, a larger batch
needs more, bf16 activations less, and the estimate agrees with MemTracker on a real step of the tiny model. Its
lean tracker finds MemTracker's own peak, and the precisions sharing a fake module get the figures of a fresh one."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from torch.distributed._tools.mem_tracker import MemTracker

from hiersum.commands.composed import command_config
from hiersum.commands.train import train
from hiersum.config import TrainConfig
from hiersum.data.schema import Batch
from hiersum.training import dry_run as dry_run_module
from hiersum.training.dry_run import StepMemory, dry_run, fake_training, run_tokenizer, step_memory, worst_batch
from hiersum.training.module import HierSumModule, module_hparams
from tests.helpers.config import tiny_train_config
from tests.helpers.threads import one_thread


def typed(tiny_cfg, *overrides: str) -> TrainConfig:
    return command_config(tiny_cfg(*overrides), TrainConfig, usage="test")


@dataclass(frozen=True)
class PrintedDryRun:
    cfg: TrainConfig
    out: str
    """What it printed."""
    result: dict
    """What ``train`` returned under ``dry_run``."""


@pytest.fixture(scope="module")
def printed_dry_run(tiny_corpus, tmp_path_factory, device) -> PrintedDryRun:
    """``hiersum train dry_run=true trainer.precision=bf16-true`` on the tiny corpus, run once for the module (its
    fake steps run in forked processes: 5-10 s)."""
    composed = tiny_train_config(tiny_corpus, tmp_path_factory.mktemp("dry_run") / "run", device, "dry_run=true",
                                 "trainer.precision=bf16-true")
    cfg = command_config(composed, TrainConfig, usage="test")
    with one_thread(), contextlib.redirect_stdout(io.StringIO()) as printed:
        result = train(cfg)["dry_run"]
    return PrintedDryRun(cfg, printed.getvalue(), result)


@pytest.mark.slow  # fake steps under MemTracker in forked processes: 10-20 s each
def test_a_dry_run_prints_its_table_and_trains_nothing(printed_dry_run):
    out, result = printed_dry_run.out, printed_dry_run.result
    assert "| precision | weights | gradients | optimizer state |" in out and "| 80 GB GPU |" in out
    assert [step["precision"] for step in result["steps"]] == ["32-true", "bf16-mixed", "bf16-true"]
    assert all(f"| {step['precision']} |" in out for step in result["steps"])
    assert not (Path(printed_dry_run.cfg.paths["output_dir"]) / "checkpoints").exists()
    assert set(result["batch"]) == set("BPTS") and min(result["batch"].values()) >= 1  # the largest batch's shape
    n, (fp32, mixed, true) = result["n_parameters"], result["steps"]
    assert fp32["parameters"] == mixed["parameters"] == 4 * n and true["parameters"] == 2 * n
    # Adam: two moments a weight (and a 4-byte step count a tensor)
    assert fp32["optimizer"] == pytest.approx(2 * 4 * n, rel=0.01)
    assert true["optimizer"] == pytest.approx(2 * 2 * n, rel=0.01)
    assert fp32["total"] > fp32["parameters"] + fp32["optimizer"] + fp32["activations"] > 0
    assert mixed["activations"] < fp32["activations"] and true["total"] < fp32["total"]


def fp32_step(cfg: TrainConfig) -> tuple[Batch, StepMemory]:
    """The largest batch of ``cfg`` and the fp32 step of :func:`dry_run` on it (its first row), alone: the other
    precisions' fake steps (in forked processes) are the dry run's own tests'."""
    tokenizer = run_tokenizer(cfg)
    batch = worst_batch(cfg, tokenizer)
    return batch, step_memory(fake_training(cfg, tokenizer, cfg.tokenizer.vocab_size, None), batch, "32-true")[1]


@pytest.mark.slow  # two fake steps under MemTracker
def test_a_larger_batch_needs_more_memory(tiny_cfg):
    (small_batch, small), (large_batch, large) = (fp32_step(typed(tiny_cfg, f"data.batch_tokens={tokens}"))
                                                  for tokens in (1024, 4096))
    assert large_batch.src.shape[0] > small_batch.src.shape[0]
    assert large.activations > small.activations
    assert large.parameters == small.parameters


@pytest.mark.slow  # fake steps under MemTracker in forked processes: 10-20 s each
def test_the_estimate_agrees_with_memtracker_on_a_real_step(tiny_cfg):
    cfg = typed(tiny_cfg)
    batch, estimate = fp32_step(cfg)
    tokenizer = run_tokenizer(cfg)
    module = HierSumModule(**{**module_hparams(cfg.model, cfg.optim, cfg.data, tokenizer),
                              "vocab_size": cfg.tokenizer.vocab_size}).train()
    optimizer = module.configure_optimizers()["optimizer"]
    for parameter in module.parameters():
        parameter.grad = torch.zeros_like(parameter)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    tracker = MemTracker()
    tracker.track_external(module, optimizer)
    with tracker:
        module.smoothed_nll(batch, module.teacher_forced(batch)).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    (measured,) = tracker.get_tracker_snapshot("peak").values()
    assert estimate.total == pytest.approx(measured["Total"], rel=0.05)
    assert estimate.optimizer == measured["Optstate"] and estimate.parameters == measured["Parameter"]


@pytest.mark.slow  # fake steps under MemTracker in forked processes: 10-20 s each
def test_the_lean_tracker_finds_memtrackers_own_peak(printed_dry_run, monkeypatch):
    monkeypatch.setattr(dry_run_module, "StepPeakTracker", MemTracker)
    with_memtracker = dry_run(printed_dry_run.cfg)
    assert with_memtracker.as_dict()["steps"] == printed_dry_run.result["steps"]  # the lean tracker's figures


@pytest.mark.slow  # fake steps under MemTracker: 10-20 s
def test_a_shared_fake_module_gives_each_precision_the_figures_of_a_fresh_one(tiny_cfg):
    cfg = typed(tiny_cfg)
    tokenizer = run_tokenizer(cfg)
    batch = worst_batch(cfg, tokenizer)
    shared = fake_training(cfg, tokenizer, cfg.tokenizer.vocab_size, None)
    for precision in ("32-true", "bf16-mixed", "32-true"):
        fresh = fake_training(cfg, tokenizer, cfg.tokenizer.vocab_size, None)
        assert step_memory(shared, batch, precision) == step_memory(fresh, batch, precision)


@pytest.mark.parametrize("torch_has_the_context", [True, False], ids=["torch-2.13", "torch-2.11"])
def test_the_fake_step_reads_as_compiling_with_or_without_torchs_session_context(torch_has_the_context,
                                                                                 monkeypatch):
    """The fake step must read ``torch.compiler.is_compiling()`` as True (the decoder then reads no tensor value);
    torch 2.11 has no ``_compile_session_context``: every dry run failed on the GPU machines until this."""
    if not torch_has_the_context:
        monkeypatch.delattr(torch.compiler, "_compile_session_context", raising=False)
    assert not torch.compiler.is_compiling()
    with dry_run_module.compiling():
        assert torch.compiler.is_compiling()
    assert not torch.compiler.is_compiling()
