"""``optim``: the optimizer, its learning-rate schedule and the divergence guard (:class:`OptimConfig`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hiersum.config.checks import MISSING, check, is_number

NOAM_SCHEDULER = "hiersum.training.schedule.noam_scheduler"
"""``_target_`` of the noam schedule (:func:`hiersum.training.schedule.noam_scheduler`)."""


def adam_defaults() -> dict[str, Any]:
    """``conf/optim/noam.yaml``'s optimizer: Adam at base lr 1.0 (the noam factor scales it)."""
    return {"_target_": "torch.optim.Adam", "_partial_": True, "lr": 1.0, "betas": [0.9, 0.998], "eps": 1e-9,
            "weight_decay": 0.0}


def noam_defaults() -> dict[str, Any]:
    """``conf/optim/noam.yaml``'s scheduler: the noam schedule (``d_model`` null: the model's width)."""
    return {"_target_": NOAM_SCHEDULER, "_partial_": True, "lr": 0.3, "warmup_steps": 300, "d_model": None}


def _check_optimizer_options(prefix: str, node: Mapping[str, Any]) -> None:
    """The options of an optimizer or scheduler node (or a parameter group's) that cannot be right: a learning
    rate <= 0, warm-up steps < 1, a negative weight decay or epsilon, betas outside [0, 1)."""
    for name, expected in (("lr", "a number > 0"), ("weight_decay", "a number >= 0"), ("eps", "a number >= 0")):
        value = node.get(name, 1)
        check(is_number(value) and (value > 0 if name == "lr" else value >= 0), f"{prefix}.{name}", expected, value)
    steps = node.get("warmup_steps", 1)
    check(is_number(steps) and steps >= 1 and steps % 1 == 0, f"{prefix}.warmup_steps", "an integer >= 1", steps)
    betas = node.get("betas", (0, 0))
    pair = isinstance(betas, (list, tuple)) and len(betas) == 2
    check(pair and all(is_number(beta) and 0 <= beta < 1 for beta in betas), f"{prefix}.betas",
           "two numbers in [0, 1)", betas)


@dataclass
class ParameterGroupConfig:
    """The optimizer options and schedule of the pretrained encoder's parameter group (``optim.pretrained_group``)."""

    optimizer: dict[str, Any] = field(default_factory=dict)
    """Options of ``optim.optimizer`` replaced for this group (e.g. ``weight_decay``)."""
    scheduler: dict[str, Any] = field(default_factory=dict)
    """Options of ``optim.scheduler`` replaced for this group (e.g. noam ``lr``, ``warmup_steps``); the scheduler
    receives each as a list, one value per group (``hiersum.training.schedule.noam_scheduler`` takes them)."""


@dataclass
class OptimConfig:
    """The optimizer and its learning-rate schedule, built with ``hydra.utils.instantiate`` by
    :meth:`hiersum.training.module.HierSumModule.configure_optimizers`.

    ``optimizer`` and ``scheduler`` are MISSING in the schema, so that a preset gives each whole (no key
    of another optimizer merged in); ``conf/optim/noam.yaml`` (the default) gives Adam at base lr 1.0 times
    the noam factor ``lr * d^-0.5 * min(step^-0.5, step * warmup^-1.5)``. Built in Python without them,
    ``OptimConfig()`` takes those of ``conf/optim/noam.yaml``.
    """

    optimizer: dict[str, Any] = MISSING
    """A partial optimizer (``_partial_: true``), called with the parameters: ``instantiate(optimizer)(params)``."""
    scheduler: dict[str, Any] | None = MISSING
    """A partial LR scheduler, called with the optimizer and stepped after every update; a ``d_model``
    key left null is filled with ``model.d_model``. None: the optimizer's constant lr."""
    label_smoothing: float = 0.1
    """Label smoothing of the training loss."""
    copy_oov_share: float = 0.0
    """With ``model.copy_oov``: in every training batch, each id found both in an example's source and in its target
    is hidden as an out-of-vocabulary word (an extended id, embedded as ``<unk>``, in the source and the target) with
    this probability (:mod:`hiersum.data.extended_vocabulary`): the exposure that teaches copying what the vocabulary
    lacks (0.1 suffices on the copy task: docs/model.md). 0: none."""
    max_consecutive_skips: int = 8
    """Divergence guard: an update whose loss or gradient is not finite is skipped (counted as
    ``train/skipped_steps``); after this many consecutive skips training stops (TrainingDiverged)."""
    pretrained_group: ParameterGroupConfig | None = None
    """The pretrained encoder's weights (``model=pretrained``) in a parameter group of their own, with their own
    optimizer options and schedule (PreSumm: lr 0.002 and warm-up 20000 for BERT, 0.2 and 10000 for the new
    layers; ``conf/optim/presumm.yaml``). None: one group for every parameter."""

    def __post_init__(self) -> None:
        if isinstance(self.pretrained_group, Mapping):
            self.pretrained_group = ParameterGroupConfig(**self.pretrained_group)
        if self.optimizer == MISSING:
            self.optimizer = adam_defaults()
        if self.scheduler == MISSING:
            self.scheduler = noam_defaults()
        for name in ("optimizer", "scheduler"):
            node = getattr(self, name)
            if (node is not None or name == "optimizer") and not (isinstance(node, Mapping) and "_target_" in node):
                raise ValueError(f"optim.{name} must be a mapping with a _target_, found {node!r}")
        group = self.pretrained_group
        unknown = sorted(set(group.scheduler) - set(self.scheduler or {})) if group is not None else []
        if unknown:
            raise ValueError(f"optim.pretrained_group.scheduler replaces {unknown}, which optim.scheduler does not "
                             f"have (found {sorted(self.scheduler or {})})")
        nodes = {"optim.optimizer": self.optimizer, "optim.scheduler": self.scheduler or {}}
        if group is not None:
            nodes.update({"optim.pretrained_group.optimizer": group.optimizer,
                          "optim.pretrained_group.scheduler": group.scheduler})
        for prefix, node in nodes.items():
            _check_optimizer_options(prefix, node)
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"optim.label_smoothing must be in [0, 1), found {self.label_smoothing}")
        check(0.0 <= self.copy_oov_share <= 1.0, "optim.copy_oov_share", "in [0, 1]", self.copy_oov_share)
