"""The Noam learning-rate schedule (hiersum.training.schedule): update k uses lr(k), as the official code."""

import pytest
import torch

from hiersum.training.schedule import NoamSchedule, noam_scheduler


def noam(k: int, lr: float, d_model: int, warmup: int) -> float:
    return lr * d_model**-0.5 * min(k**-0.5, k * warmup**-1.5)


def test_noam_factor_warms_up_linearly_then_decays_as_inverse_sqrt():
    schedule = NoamSchedule(lr=2.0, d_model=64, warmup_steps=100)
    peak = schedule.factor(100)
    assert peak == pytest.approx(2.0 * 64**-0.5 * 100**-0.5)
    assert schedule.factor(50) == pytest.approx(peak / 2)
    assert schedule.factor(400) == pytest.approx(peak / 2)


def test_update_k_uses_lr_of_k():
    weight = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([weight], lr=1.0)
    scheduler = noam_scheduler(optimizer, lr=0.5, warmup_steps=4, d_model=16)
    used = []
    for _ in range(8):
        used.append(optimizer.param_groups[0]["lr"])  # the lr the next update uses
        weight.grad = torch.ones(1)
        optimizer.step()
        scheduler.step()
    assert used == pytest.approx([noam(k, 0.5, 16, 4) for k in range(1, 9)], rel=1e-12)
    assert used[0] < used[1]  # the first two updates no longer share lr(1)
