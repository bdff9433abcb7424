"""``trainer``: every argument of ``pytorch_lightning.Trainer``, written as a dataclass a type checker reads.

The fields are the arguments of ``Trainer.__init__`` with Lightning's defaults, in its order. A type built only
of ``int``, ``float``, ``bool``, ``str`` and ``None`` (a ``Literal`` counts as the types of its values) is kept,
so that OmegaConf refuses a wrong type at composition; any other (a ``Logger``, a ``Strategy``, a ``timedelta``)
is ``Any``, for a ``_target_`` node or a name; four fields are typed narrower on purpose (their docstrings say
"Narrowed"). ``tests/config/test_option_checks.py`` checks the class against the installed Lightning's signature,
so a Lightning release that adds, drops or changes an argument fails there, naming it. ``__post_init__`` then
refuses at composition what Lightning would refuse in its constructor. Lightning is not imported here, so that an
action's ``--help`` answers at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hiersum.config.checks import check, is_number
from hiersum.config.choices import Precision

TRAINER_ACCELERATORS = ("auto", "cpu", "cuda", "gpu", "mps", "tpu")
"""The accelerator names ``pytorch_lightning.Trainer`` takes (``auto``, ``gpu`` and its ``AcceleratorRegistry``)."""
TRAINER_PROFILERS = ("simple", "advanced", "pytorch", "xla")
"""The profiler names ``pytorch_lightning.Trainer`` takes."""
_TRAINER_MINIMA = {"num_nodes": 1, "fast_dev_run": 0, "max_epochs": -1, "min_epochs": 0, "max_steps": -1,
                   "min_steps": 0, "check_val_every_n_epoch": 1, "num_sanity_val_steps": -1, "log_every_n_steps": 0,
                   "accumulate_grad_batches": 1, "gradient_clip_val": 0, "reload_dataloaders_every_n_epochs": 0}
"""The least value of each numeric Trainer argument (-1: no limit, or every batch of the sanity check)."""
_BATCH_LIMIT = "an int >= 0 or a float in [0.0, 1.0]"
_DURATION = "a duration 'DD:HH:MM:SS'"


def _is_batch_limit(value: Any) -> bool:
    """Lightning's rule for ``limit_*_batches``: a fraction in [0, 1] or a whole number of batches."""
    return is_number(value) and (0 <= value <= 1 or (value > 1 and value % 1 == 0))


def _is_duration(value: Any, pattern: str = r"\d+:\d+:\d+:\d+") -> bool:
    """A ``DD:HH:MM:SS`` string matching ``pattern``."""
    return isinstance(value, str) and re.fullmatch(pattern, value.strip()) is not None


def _is_devices(value: Any) -> bool:
    """Lightning's ``devices``: ``auto``, -1 (all), a count, a list of indices or a string of them (``"0,1"``)."""
    if isinstance(value, str):
        return value == "auto" or re.fullmatch(r"-1|\d+|(\d+,)+\d*", value.replace(" ", "")) is not None
    if isinstance(value, list):
        return bool(value) and all(isinstance(index, int) and index >= 0 for index in value)
    return isinstance(value, int) and not isinstance(value, bool) and value >= -1 and value != 0


@dataclass
class TrainerConfig:
    """Every argument of ``pytorch_lightning.Trainer`` with Lightning's default (``conf/trainer/*.yaml``), set as
    ``trainer.NAME=VALUE`` (Lightning's documentation describes each); a ``_target_`` node for
    ``hydra.utils.instantiate``. A value of the wrong type is refused at composition, one Lightning would refuse in
    ``__post_init__``."""

    _target_: str = "pytorch_lightning.Trainer"
    """What ``hydra.utils.instantiate`` builds."""
    accelerator: Any = "auto"
    strategy: Any = "auto"
    devices: Any = "auto"
    num_nodes: int = 1
    precision: Precision | None = None
    """Narrowed: a :data:`hiersum.config.Precision` (the one vocabulary of training and decoding; ``16`` becomes
    ``"16"``)."""
    logger: Any = None
    callbacks: Any = None
    fast_dev_run: int | bool = False
    max_epochs: int | None = None
    min_epochs: int | None = None
    max_steps: int = -1
    min_steps: int | None = None
    max_time: str | None = None
    """Narrowed: a time limit as ``DD:HH:MM:SS`` (not a ``timedelta`` or dict)."""
    limit_train_batches: int | float | None = None
    limit_val_batches: int | float | None = None
    limit_test_batches: int | float | None = None
    limit_predict_batches: int | float | None = None
    overfit_batches: int | float = 0.0
    val_check_interval: Any = None
    check_val_every_n_epoch: int | None = 1
    num_sanity_val_steps: int | None = None
    log_every_n_steps: int | None = None
    enable_checkpointing: bool | None = None
    enable_progress_bar: bool | None = None
    enable_model_summary: bool | None = None
    accumulate_grad_batches: int = 1
    gradient_clip_val: int | float | None = None
    gradient_clip_algorithm: str | None = None
    deterministic: bool | str | None = None
    """Narrowed: a bool or ``warn`` (Lightning's ``_LITERAL_WARN``)."""
    benchmark: bool | None = None
    inference_mode: bool = True
    use_distributed_sampler: bool = True
    profiler: Any = None
    detect_anomaly: bool = False
    barebones: bool = False
    plugins: Any = None
    sync_batchnorm: bool = False
    reload_dataloaders_every_n_epochs: int = 0
    default_root_dir: str | None = None
    """Narrowed: a folder as a string (Lightning's ``_PATH``)."""
    enable_autolog_hparams: bool = True
    model_registry: str | None = None

    def __post_init__(self) -> None:
        for name, least in _TRAINER_MINIMA.items():
            value = getattr(self, name)
            check(value is None or value >= least, f"trainer.{name}", f">= {least}", value)
        check(isinstance(self.accelerator, Mapping) or self.accelerator in TRAINER_ACCELERATORS,
               "trainer.accelerator", f"one of {', '.join(TRAINER_ACCELERATORS)}", self.accelerator)
        if self.precision is not None:
            self.precision = Precision.coerce(self.precision, "trainer.precision")
        check(self.profiler is None or isinstance(self.profiler, Mapping) or str(self.profiler).lower()
               in TRAINER_PROFILERS, "trainer.profiler", f"null or one of {', '.join(TRAINER_PROFILERS)}",
               self.profiler)
        check(self.gradient_clip_algorithm is None or self.gradient_clip_algorithm.lower() in ("norm", "value"),
               "trainer.gradient_clip_algorithm", "null, norm or value", self.gradient_clip_algorithm)
        check(self.deterministic in (None, True, False, "warn"), "trainer.deterministic", "null, true, false or "
               "warn", self.deterministic)
        for name in ("limit_train_batches", "limit_val_batches", "limit_test_batches", "limit_predict_batches",
                     "overfit_batches"):
            value = getattr(self, name)
            check(value is None or _is_batch_limit(value), f"trainer.{name}", _BATCH_LIMIT, value)
        interval = self.val_check_interval
        check(interval is None or _is_batch_limit(interval) or _is_duration(interval), "trainer.val_check_interval",
               f"{_BATCH_LIMIT} or {_DURATION}", interval)
        check(self.max_time is None or _is_duration(self.max_time, r"\d+:\d\d:\d\d:\d\d"), "trainer.max_time",
               f"null or {_DURATION}", self.max_time)
        check(_is_devices(self.devices), "trainer.devices", "auto, -1 (all), a count >= 1 or device indices "
               "([0, 1] or '0,1')", self.devices)
