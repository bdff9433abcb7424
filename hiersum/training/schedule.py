"""Learning-rate schedules, built from ``optim.scheduler`` (``conf/optim/*.yaml``) with
``hydra.utils.instantiate`` by :meth:`hiersum.training.module.HierSumModule.configure_optimizers`."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.optim.lr_scheduler import LambdaLR


class NoamSchedule:
    """Multiplier of the base lr 1.0 for ``LambdaLR``: update k (k = 1, 2, ...) uses
    ``noam(k) = lr * d^-0.5 * min(k^-0.5, k * warmup^-1.5)``, as the official code.

    ``LambdaLR`` calls the schedule with the number of scheduler steps taken so far: 0 for the first
    update, k - 1 for update k; :meth:`__call__` adds the one. A callable object (not a lambda) so
    that ``LambdaLR.state_dict`` can save it.
    """

    def __init__(self, *, lr: float, d_model: int, warmup_steps: int) -> None:
        if warmup_steps < 1:
            raise ValueError(f"noam warmup_steps must be >= 1, found {warmup_steps}")
        self.lr = lr
        self.d_model = d_model
        self.warmup_steps = warmup_steps

    def factor(self, update: int) -> float:
        """``noam(update)``, the lr of update number ``update`` (>= 1)."""
        return self.lr * self.d_model**-0.5 * min(update**-0.5, update * self.warmup_steps**-1.5)

    def __call__(self, scheduler_steps: int) -> float:
        return self.factor(scheduler_steps + 1)


def noam_scheduler(
    optimizer: torch.optim.Optimizer,
    *,
    lr: float | Sequence[float],
    warmup_steps: int | Sequence[int],
    d_model: int | Sequence[int],
) -> LambdaLR:
    """The noam schedule of ``optimizer`` (whose base lr should be 1.0), stepped after every update:
    ``LambdaLR(optimizer, NoamSchedule(lr=lr, d_model=d_model, warmup_steps=warmup_steps))``.

    An argument may also be a list, one value per parameter group of the optimizer (``optim.pretrained_group``):
    each group then follows its own noam schedule."""
    groups = len(optimizer.param_groups)
    values = {"lr": lr, "warmup_steps": warmup_steps, "d_model": d_model}
    if not any(isinstance(value, Sequence) for value in values.values()):
        return LambdaLR(optimizer, NoamSchedule(lr=lr, d_model=d_model, warmup_steps=warmup_steps))
    for name, value in values.items():
        if isinstance(value, Sequence) and len(value) != groups:
            raise ValueError(f"noam {name}={list(value)}: expected one value per parameter group ({groups})")
    per_group = [{name: value[index] if isinstance(value, Sequence) else value for name, value in values.items()}
                 for index in range(groups)]
    return LambdaLR(optimizer, [NoamSchedule(**options) for options in per_group])
