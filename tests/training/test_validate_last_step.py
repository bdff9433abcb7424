"""A run bounded by ``trainer.max_steps`` and validating every N steps ends validated, its checkpoints holding the
network it ends with (:class:`hiersum.training.callbacks.ValidateLastStep`, in ``conf/callbacks/default.yaml``)."""

from __future__ import annotations

import pytest
import torch

from hiersum.commands.train import train
from tests.helpers.logged import csv_rows


@pytest.mark.parametrize(("max_steps", "validated_at"), [(5, [2, 4, 5]), (4, [2, 4])])
def test_the_last_step_is_validated_once_and_kept(max_steps, validated_at, tiny_cfg, tmp_path):
    """5 steps validating every 2: Lightning alone validates after steps 2 and 4 and never sees step 5; a last step
    that is a multiple of 2 is validated once."""
    cfg = tiny_cfg("eval_split=null", f"trainer.max_steps={max_steps}", "trainer.max_epochs=-1",
                   "trainer.val_check_interval=2", "trainer.check_val_every_n_epoch=null",
                   "trainer.limit_val_batches=1", "trainer.num_sanity_val_steps=0", "checkpoint_every_n_steps=2")
    train(cfg)
    run = tmp_path / "run"
    assert [int(row["step"]) + 1 for row in csv_rows(run) if row.get("val/loss")] == validated_at
    last = torch.load(run / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    assert last["global_step"] == max_steps
