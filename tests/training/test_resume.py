"""The pieces of an exact resume (hiersum.training.resume): which checkpoint ``ckpt_path=last`` picks,
atomic checkpoint files, the random states of a rank, the CSV log continued, the schedule restored."""

from __future__ import annotations

import os
import random
import time

import numpy as np
import pytest
import torch
from pytorch_lightning.plugins.io import TorchCheckpointIO

from hiersum.checkpoints.io import CheckpointError, read_training_checkpoint
from hiersum.training.resume import AtomicCheckpointIO, RandomState, ResumableCSVLogger, find_checkpoint
from hiersum.training.schedule import noam_scheduler


def test_last_is_the_newest_checkpoint_of_the_run_or_a_fresh_start(tmp_path):
    assert find_checkpoint("last", tmp_path) is None and find_checkpoint(None, tmp_path) is None
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    for age, name in ((30, "step00000003.ckpt"), (20, "last.ckpt"), (10, "step00000006.ckpt")):
        (folder / name).write_bytes(b"x")
        os.utime(folder / name, (time.time() - age, time.time() - age))
    (folder / ".last.ckpt.123.tmp").write_bytes(b"partial")  # a save in progress is never picked
    assert find_checkpoint("last", tmp_path) == str(folder / "step00000006.ckpt")
    os.utime(folder / "last.ckpt", (time.time(), time.time()))
    assert find_checkpoint("last", tmp_path) == str(folder / "last.ckpt")
    assert find_checkpoint(str(folder / "step00000003.ckpt"), tmp_path) == str(folder / "step00000003.ckpt")
    assert find_checkpoint("nope.ckpt", tmp_path) == "nope.ckpt"  # what is wrong with it: read_training_checkpoint
    with pytest.raises(CheckpointError, match=r"^nope.ckpt: checkpoint not found; expected a training checkpoint"):
        read_training_checkpoint("nope.ckpt")


def test_a_failed_save_leaves_the_previous_checkpoint_whole(tmp_path, monkeypatch):
    io, path = AtomicCheckpointIO(), tmp_path / "checkpoints" / "last.ckpt"
    io.save_checkpoint({"global_step": 1}, path)
    assert torch.load(path, weights_only=True) == {"global_step": 1}

    def killed_midway(self, checkpoint, file, storage_options=None):  # Lightning's writer, stopped halfway
        with open(file, "wb") as handle:
            handle.write(b"PK\x03\x04 half a checkpoint")
        raise KeyboardInterrupt

    monkeypatch.setattr(TorchCheckpointIO, "save_checkpoint", killed_midway)
    with pytest.raises(KeyboardInterrupt):
        io.save_checkpoint({"global_step": 2}, path)
    monkeypatch.undo()
    assert torch.load(path, weights_only=True) == {"global_step": 1}
    assert sorted(p.name for p in path.parent.iterdir()) == ["last.ckpt"]


def test_random_states_round_trip_through_a_weights_only_checkpoint(tmp_path):
    torch.manual_seed(1), np.random.seed(2), random.seed(3)
    saved = RandomState().state_dict()
    expected = (torch.rand(3), np.random.rand(3), random.random())
    torch.save(saved, tmp_path / "rng.pt")

    torch.manual_seed(9), np.random.seed(9), random.seed(9)
    callback = RandomState()
    callback.load_state_dict(torch.load(tmp_path / "rng.pt", weights_only=True))
    assert torch.rand(1).item() != expected[0][0].item()  # restored at the first training batch, not before
    callback.on_train_batch_start(None, None, None, 0)
    assert torch.equal(torch.rand(3), expected[0])
    assert np.array_equal(np.random.rand(3), expected[1]) and random.random() == expected[2]


def test_the_csv_log_of_a_resumed_run_keeps_the_rows_before_the_checkpoint(tmp_path):
    first = ResumableCSVLogger(tmp_path, name="csv", version="")
    for step in range(6):
        first.log_metrics({"train/loss": 10.0 - step}, step=step)
    first.save()
    resumed = ResumableCSVLogger(tmp_path, name="csv", version="")
    resumed.continue_from(4)
    resumed.log_metrics({"train/loss": 1.5, "val/loss": 2.0}, step=4)
    resumed.save()
    lines = (tmp_path / "csv" / "metrics.csv").read_text().splitlines()
    assert lines[0] == "step,train/loss,val/loss"
    assert lines[1:] == ["0,10.0,", "1,9.0,", "2,8.0,", "3,7.0,", "4,1.5,2.0"]


def test_the_schedule_restored_after_k_updates_gives_update_k_plus_1_lr_of_k_plus_1():
    def run(saved=None, updates=3):  # the optimizer and scheduler states are restored as Lightning does
        weight = torch.nn.Parameter(torch.zeros(1))
        optimizer = torch.optim.SGD([weight], lr=1.0)
        scheduler = noam_scheduler(optimizer, lr=0.5, warmup_steps=4, d_model=16)
        if saved is not None:
            optimizer.load_state_dict(saved[0])
            scheduler.load_state_dict(saved[1])
        used = []
        for _ in range(updates):
            used.append(optimizer.param_groups[0]["lr"])
            weight.grad = torch.ones(1)
            optimizer.step()
            scheduler.step()
        return used, (optimizer.state_dict(), scheduler.state_dict())

    uninterrupted, _ = run(updates=6)
    first, state = run(updates=3)
    rest, _ = run(state, updates=3)
    assert first + rest == uninterrupted
    assert rest[0] == pytest.approx(0.5 * 16**-0.5 * min(4**-0.5, 4 * 4**-1.5))  # update 4 uses lr(4)
