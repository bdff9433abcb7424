"""Every ``trainer.precision`` hiersum offers runs, through the real commands: ``hiersum train`` on the tiny model
for 20 steps in ``32``, ``bf16-mixed``, ``16-mixed`` and ``bf16-true`` (Lightning's precision plugins, its
``convert_input`` of the batch included), and ``hiersum summarize`` of 4 records in ``32``, ``bf16`` (autocast) and
``bf16-true`` (the weights in bfloat16).

What each must show, from what bfloat16's 8-bit mantissa (relative rounding 2^-8 = 0.4%) gives on this model: a
mixed mode's loss within 1% of fp32's at each of the 20 steps (the same weights and batches, autocast to bfloat16;
measured: at most 0.008%); bf16-true, whose weights and Adam updates are bfloat16, finite and decreasing (the mean
of the last 5 steps below that of the first 5; measured: 5.63 -> 5.08); the summaries of every bf16 mode equal
fp32's on at least 3 of the 4 records (measured: 4 of 4), with other scores (the decode did run in bfloat16).

The optimizer runs at a constant lr 3e-3 instead of the noam warm-up: noam's first 20 updates (under 3e-4) are below
bfloat16's resolution of the weights, so a bf16-true run does not move (measured over 20 noam steps: 5.69 ->
5.72, fp32 5.73 -> 5.68)."""

from __future__ import annotations

import csv
import json
import math
import warnings
from pathlib import Path

import pytest
import torch

from hiersum.commands.summarize import summarize
from hiersum.commands.train import train
from tests.helpers.config import compose_config, train_overrides
from tests.helpers.device import require_device
from tests.helpers.shared import made_once

pytestmark = pytest.mark.slow  # four fits and one of 150 steps, once a session: 1-2 minutes on the 2-core CI machine

STEPS = 20
TRAIN_PRECISIONS = ("32", "bf16-mixed", "16-mixed", "bf16-true")


def train_losses(run_dir: Path) -> list[float]:
    """``train/loss`` of every step (the CSV logger, ``log_every_n_steps=1``), in step order."""
    with open(run_dir / "csv" / "metrics.csv", newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row.get("train/loss")]
    return [float(row["train/loss"]) for row in sorted(rows, key=lambda row: int(row["step"]))]


@pytest.fixture(scope="module")
def runs(tiny_corpus: Path, tmp_path_factory: pytest.TempPathFactory,
         worker_id: str) -> dict[str, tuple[list[float], Path, list[str]]]:
    """Per precision: (the 20 losses, the last checkpoint, the warnings the run raised); the four runs made once
    for the session (:func:`tests.helpers.shared.made_once`)."""
    device = require_device()

    def make(folder: Path) -> None:
        results = {}
        for precision in TRAIN_PRECISIONS:
            run_dir = folder / f"run-{precision}"
            cfg = compose_config("train", train_overrides(
                tiny_corpus, f"trainer.precision={precision}", f"trainer.accelerator={device.type}",
                f"trainer.max_steps={STEPS}", "trainer.log_every_n_steps=1", "trainer.limit_val_batches=0",
                "trainer.num_sanity_val_steps=0", "optim.scheduler=null", "optim.optimizer.lr=3e-3",
                "model.dropout=0.0", "eval_split=null", "logger=csv",
            ), run_dir)
            with warnings.catch_warnings(record=True) as caught:  # the 16-mixed fallback's among them
                warnings.simplefilter("always")
                train(cfg)
            results[precision] = (train_losses(run_dir), str(run_dir / "checkpoints" / "last.ckpt"),
                                  [str(warning.message) for warning in caught])
        (folder / "runs.json").write_text(json.dumps(results), encoding="utf-8")

    folder = made_once(tmp_path_factory, worker_id, f"precision-runs-{device.type}", make)
    return {precision: (losses, Path(checkpoint), caught) for precision, (losses, checkpoint, caught)
            in json.loads((folder / "runs.json").read_text(encoding="utf-8")).items()}


@pytest.mark.parametrize("precision", ["bf16-mixed", "16-mixed"])
def test_a_mixed_precision_run_has_the_loss_of_fp32(runs, precision):
    fp32, mixed = runs["32"][0], runs[precision][0]
    assert len(fp32) == len(mixed) == STEPS
    assert mixed != fp32  # autocast did act: bfloat16 rounding shows in the losses
    for step, (reference, loss) in enumerate(zip(fp32, mixed, strict=True)):
        assert loss == pytest.approx(reference, rel=1e-2), f"step {step}"


def test_16_mixed_on_a_cpu_falls_back_to_bf16_mixed_with_a_warning(runs):
    if require_device().type != "cpu":
        pytest.skip("on CUDA 16-mixed is float16 autocast")
    assert any("16-mixed" in message and "bf16-mixed" in message for message in runs["16-mixed"][2])
    assert runs["16-mixed"][0] == runs["bf16-mixed"][0]  # the same computation


def test_a_bf16_true_run_trains_in_bfloat16_and_its_loss_decreases(runs):
    losses, checkpoint, _ = runs["bf16-true"]
    assert len(losses) == STEPS and all(math.isfinite(loss) for loss in losses)
    assert sum(losses[-5:]) < sum(losses[:5]), losses
    weights = torch.load(checkpoint, map_location="cpu", weights_only=True)["state_dict"]
    assert {tensor.dtype for tensor in weights.values() if tensor.is_floating_point()} == {torch.bfloat16}


@pytest.fixture(scope="module")
def fitted(tiny_corpus: Path, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The last checkpoint of the tiny model after 150 fp32 steps at lr 1e-2: its summaries depend on the source (a
    model of 20 steps writes the same words for every record, which would show nothing of rounding). Made once for
    the session."""
    device = require_device()

    def make(run_dir: Path) -> None:
        train(compose_config("train", train_overrides(
            tiny_corpus, f"trainer.accelerator={device.type}", "trainer.max_steps=150", "trainer.limit_val_batches=0",
            "trainer.num_sanity_val_steps=0", "optim.scheduler=null", "optim.optimizer.lr=1e-2", "model.dropout=0.0",
            "eval_split=null", "logger=csv",
        ), run_dir))

    return made_once(tmp_path_factory, worker_id, f"precision-fitted-{device.type}", make) / "checkpoints" / "last.ckpt"


def summaries(checkpoint: Path, source: Path, precision: str, folder: Path) -> list[tuple[str, float]]:
    """(summary, score) of each record of ``source``, by ``hiersum summarize precision=...``."""
    output = folder / f"{precision}.jsonl"
    summarize(compose_config("summarize", [
        f"checkpoint={checkpoint}", f"input={source}", f"output={output}", f"precision={precision}",
        f"device={require_device()}", "decode.beam_size=2", "decode.max_length=12", "decode.min_length=2",
    ], folder / f"hydra-{precision}"))
    return [(record["summary"], record["score"])
            for record in map(json.loads, output.read_text(encoding="utf-8").splitlines())]


@pytest.mark.parametrize("precision", ["bf16", "bf16-true"])
def test_summaries_in_bf16_agree_with_fp32(fitted, tiny_corpus, tmp_path, precision):
    source = tmp_path / "four.jsonl"  # records it was trained on: what it summarizes best
    source.write_text("".join((tiny_corpus / "train.jsonl").read_text(encoding="utf-8").splitlines(True)[:4]),
                      encoding="utf-8")
    fp32 = summaries(fitted, source, "32", tmp_path)
    texts = [text for text, _ in fp32]
    assert len(texts) == 4 and len(set(texts)) > 1, texts  # the records' summaries differ: the source matters
    bf16 = summaries(fitted, source, precision, tmp_path)
    assert sum(a[0] == b[0] for a, b in zip(fp32, bf16, strict=True)) >= 3, (fp32, bf16)
    assert [score for _, score in bf16] != [score for _, score in fp32]  # the decode did run in bfloat16
