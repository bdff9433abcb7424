"""The value checks of the group schemas: ``TrainerConfig`` has every argument of ``pytorch_lightning.Trainer``
with its default, and each schema refuses in ``__post_init__`` a value that cannot be right, naming the option,
what it expects and what it found (``command_config`` turns that into a one-line usage error)."""

from __future__ import annotations

import inspect
from dataclasses import fields
from datetime import timedelta
from types import UnionType
from typing import Any, Literal, Optional, Union, get_args, get_origin, get_type_hints

import pytest
import pytorch_lightning as pl
from hydra.utils import instantiate
from lightning_fabric.connector import (
    _PRECISION_INPUT_INT,
    _PRECISION_INPUT_STR,
    _PRECISION_INPUT_STR_ALIAS,
    _PRECISION_INPUT_STR_ALIAS_CONVERSION,
)
from pytorch_lightning.accelerators import AcceleratorRegistry

from hiersum.config import (
    TRAINER_ACCELERATORS,
    DataConfig,
    ModelConfig,
    OptimConfig,
    Precision,
    TrainerConfig,
)

NARROWED: dict[str, Any] = {"precision": Precision | None, "max_time": str | None, "deterministic": bool | str | None,
                            "default_root_dir": str | None}
"""The fields :class:`TrainerConfig` types narrower than (or, for a type alias, as) Lightning's signature, as their
docstrings say ("Narrowed")."""
PLAIN = (int, float, bool, str, type(None))


def plain_type(hint: Any) -> Any:
    """The schema type of a Lightning annotation: the union of its plain types (``Optional`` and ``Union``
    flattened, a ``Literal`` as the types of its values), or ``Any`` where a member is an object."""
    members = _plain_members(hint)
    if members is None:
        return Any
    return Union[tuple(members)] if len(members) > 1 else members[0]  # noqa: UP007 (built at run time)


def _plain_members(hint: Any) -> list[type] | None:
    """The plain types ``hint`` allows, or None when it allows anything else."""
    if get_origin(hint) is Literal:
        return list(dict.fromkeys(type(value) for value in get_args(hint)))
    if get_origin(hint) not in (Union, UnionType):
        return [hint] if hint in PLAIN else None
    found: list[type] = []
    for member in get_args(hint):
        members = _plain_members(member)
        if members is None:
            return None
        found += [kind for kind in members if kind not in found]
    return found


def test_the_trainer_schema_has_every_argument_of_the_trainer_with_its_default():
    """The written class is the signature of the installed Lightning's ``Trainer.__init__``: its names in order, its
    defaults."""
    arguments = list(inspect.signature(pl.Trainer.__init__).parameters.values())[1:]
    schema = {field.name: field.default for field in fields(TrainerConfig) if field.name != "_target_"}
    assert list(schema) == [argument.name for argument in arguments]
    assert schema == {argument.name: argument.default for argument in arguments}
    assert TrainerConfig()._target_ == "pytorch_lightning.Trainer"


def test_the_trainer_schema_types_are_lightnings_plain_types():
    """Each field is typed as its annotation's plain members (``Optional[int]`` -> ``int | None``), ``Any`` where
    Lightning takes objects, or as :data:`NARROWED` says."""
    hints = get_type_hints(pl.Trainer.__init__)
    kinds = get_type_hints(TrainerConfig)
    assert kinds["num_nodes"] is int and kinds["max_epochs"] == int | None and kinds["fast_dev_run"] == int | bool
    assert kinds["limit_val_batches"] == int | float | None and kinds["enable_checkpointing"] == bool | None
    assert kinds["logger"] is Any and kinds["strategy"] is Any and kinds["accelerator"] is Any
    expected = {name: NARROWED.get(name, plain_type(hint)) for name, hint in hints.items() if name != "return"}
    assert {name: kind for name, kind in kinds.items() if name != "_target_"} == expected
    assert plain_type(Optional[Union[int, Literal["a", "b"]]]) == int | str | None  # noqa: UP007, UP045
    assert plain_type(Union[str, timedelta]) is Any  # noqa: UP007


def test_the_trainer_choices_are_lightnings():
    precisions = (_PRECISION_INPUT_STR, _PRECISION_INPUT_INT, _PRECISION_INPUT_STR_ALIAS)
    names = {str(value) for literal in precisions for value in get_args(literal)}
    assert sorted(Precision.__members__) == sorted(names)
    assert sorted(member.value for member in Precision) == sorted(get_args(_PRECISION_INPUT_STR))
    assert {name: Precision(name).value for name in names} == {  # each alias is the precision Lightning reads it as
        name: _PRECISION_INPUT_STR_ALIAS_CONVERSION.get(name, name) for name in names}
    assert sorted(TRAINER_ACCELERATORS) == sorted({"auto", "gpu", *AcceleratorRegistry.available_accelerators()})


TRAINER_REFUSED: list[tuple[str, Any, str]] = [  # (argument, a value it refuses, what the message expects)
    ("max_steps", -2, ">= -1"),
    ("max_epochs", -5, ">= -1"),
    ("min_epochs", -1, ">= 0"),
    ("min_steps", -1, ">= 0"),
    ("num_nodes", 0, ">= 1"),
    ("fast_dev_run", -1, ">= 0"),
    ("check_val_every_n_epoch", 0, ">= 1"),
    ("num_sanity_val_steps", -2, ">= -1"),
    ("log_every_n_steps", -1, ">= 0"),
    ("accumulate_grad_batches", 0, ">= 1"),
    ("gradient_clip_val", -1.0, ">= 0"),
    ("reload_dataloaders_every_n_epochs", -1, ">= 0"),
    ("precision", "64bit", "one of 'transformer-engine', "),
    ("precision", "bf32", "'16-mixed', 'bf16-true', 'bf16-mixed', '32-true', '64-true', '64', '32', '16', 'bf16'"),
    ("accelerator", "tpu2", "one of auto, cpu, cuda, gpu, mps, tpu"),
    ("devices", 0, "auto, -1 (all), a count >= 1 or device indices"),
    ("devices", "first", "auto, -1 (all)"),
    ("devices", [], "auto, -1 (all)"),
    ("limit_train_batches", 1.5, "an int >= 0 or a float in [0.0, 1.0]"),
    ("limit_val_batches", -1, "an int >= 0 or a float in [0.0, 1.0]"),
    ("limit_test_batches", 2.5, "an int >= 0"),
    ("limit_predict_batches", -0.5, "an int >= 0"),
    ("overfit_batches", 1.5, "an int >= 0"),
    ("val_check_interval", "x", "an int >= 0 or a float in [0.0, 1.0] or a duration 'DD:HH:MM:SS'"),
    ("val_check_interval", 1.5, "a duration 'DD:HH:MM:SS'"),
    ("val_check_interval", "1:00:00", "a duration"),
    ("max_time", "1h", "null or a duration 'DD:HH:MM:SS'"),
    ("max_time", "00:1:00:00", "null or a duration"),
    ("gradient_clip_algorithm", "max", "null, norm or value"),
    ("deterministic", "maybe", "null, true, false or warn"),
    ("profiler", "fast", "null or one of simple, advanced, pytorch, xla"),
]


@pytest.mark.parametrize(("name", "value", "expected"), TRAINER_REFUSED,
                         ids=[f"{name}={value}" for name, value, _ in TRAINER_REFUSED])
def test_the_trainer_schema_refuses_what_lightning_would_refuse(name, value, expected):
    with pytest.raises(ValueError) as error:
        TrainerConfig(**{name: value})
    assert str(error.value).startswith(f"trainer.{name} must be ") and expected in str(error.value)
    assert str(error.value).endswith(f", found {value!r}")


TRAINER_ACCEPTED: list[tuple[str, Any, Any]] = [  # (argument, a value, the Trainer's attribute it becomes)
    ("max_steps", 2, 2),
    ("limit_train_batches", 1, 1),  # an int: one batch (1.0 would be every batch)
    ("limit_train_batches", 0.5, 0.5),
    ("limit_val_batches", 3.0, 3),
    ("val_check_interval", 0.25, 0.25),
    ("val_check_interval", 10, 10),
    ("val_check_interval", "00:00:30:00", 1800.0),
    ("precision", "64-true", "64-true"),
    ("precision", "32", "32-true"),
    ("max_time", "00:01:00:00", 3600.0),
    ("gradient_clip_algorithm", "Value", "value"),
    ("profiler", "simple", "SimpleProfiler"),
    ("devices", "1", 1),
]
READ: dict[str, Any] = {  # how a test reads an argument back from the Trainer (others: its attribute of that name)
    "val_check_interval": lambda trainer: trainer._val_check_time_interval or trainer.val_check_interval,
    "max_time": lambda trainer: next(callback._duration for callback in trainer.callbacks
                                     if isinstance(callback, pl.callbacks.Timer)),
    "gradient_clip_algorithm": lambda trainer: trainer.gradient_clip_algorithm.value,
    "profiler": lambda trainer: type(trainer.profiler).__name__,
    "devices": lambda trainer: trainer.num_devices,
}


@pytest.mark.parametrize(("name", "value", "reached"), TRAINER_ACCEPTED,
                         ids=[f"{name}={value}" for name, value, _ in TRAINER_ACCEPTED])
def test_the_trainer_schema_passes_what_lightning_takes_to_the_trainer(name, value, reached):
    options = {"accelerator": "cpu", "devices": 1, "logger": False, "enable_progress_bar": False,
               "enable_model_summary": False, name: value}
    trainer = instantiate(TrainerConfig(**options))
    assert READ.get(name, lambda trainer: getattr(trainer, name))(trainer) == reached


def _optim(**nodes: dict[str, Any]) -> OptimConfig:
    """``OptimConfig()`` (Adam + noam) with options of its ``optimizer`` / ``scheduler`` replaced, or a
    ``pretrained_group``."""
    default = OptimConfig()
    group = nodes.pop("pretrained_group", None)
    return OptimConfig(optimizer={**default.optimizer, **nodes.get("optimizer", {})},
                       scheduler={**default.scheduler, **nodes.get("scheduler", {})}, pretrained_group=group)


REFUSED: list[tuple[Any, str]] = [  # (what builds the config, its message)
    (lambda: _optim(optimizer={"lr": 0}), "optim.optimizer.lr must be a number > 0, found 0"),
    (lambda: _optim(optimizer={"lr": "fast"}), "optim.optimizer.lr must be a number > 0, found 'fast'"),
    (lambda: _optim(scheduler={"lr": -1}), "optim.scheduler.lr must be a number > 0, found -1"),
    (lambda: _optim(scheduler={"warmup_steps": -5}), "optim.scheduler.warmup_steps must be an integer >= 1, found -5"),
    (lambda: _optim(scheduler={"warmup_steps": 0}), "optim.scheduler.warmup_steps must be an integer >= 1, found 0"),
    (lambda: _optim(optimizer={"weight_decay": -0.01}), "optim.optimizer.weight_decay must be a number >= 0"),
    (lambda: _optim(optimizer={"eps": -1e-9}), "optim.optimizer.eps must be a number >= 0, found -1e-09"),
    (lambda: _optim(optimizer={"betas": [0.9, 1.0]}), "optim.optimizer.betas must be two numbers in [0, 1), found "
                                                       "[0.9, 1.0]"),
    (lambda: _optim(optimizer={"betas": [-0.1, 0.9]}), "optim.optimizer.betas must be two numbers in [0, 1)"),
    (lambda: _optim(optimizer={"betas": [0.9]}), "optim.optimizer.betas must be two numbers in [0, 1), found [0.9]"),
    (lambda: _optim(optimizer={"betas": 0.9}), "optim.optimizer.betas must be two numbers in [0, 1), found 0.9"),
    (lambda: _optim(pretrained_group={"scheduler": {"lr": 0.0}}),
     "optim.pretrained_group.scheduler.lr must be a number > 0, found 0.0"),
    (lambda: _optim(pretrained_group={"scheduler": {"warmup_steps": -1}}),
     "optim.pretrained_group.scheduler.warmup_steps must be an integer >= 1, found -1"),
    (lambda: _optim(pretrained_group={"optimizer": {"lr": -0.002}}),
     "optim.pretrained_group.optimizer.lr must be a number > 0, found -0.002"),
    (lambda: _optim(pretrained_group={"optimizer": {"weight_decay": -1}}),
     "optim.pretrained_group.optimizer.weight_decay must be a number >= 0, found -1"),
    (lambda: OptimConfig(label_smoothing=1.0), "optim.label_smoothing must be in [0, 1), found 1.0"),
    (lambda: OptimConfig(label_smoothing=-0.1), "optim.label_smoothing must be in [0, 1), found -0.1"),
    (lambda: DataConfig(path="x", batch_tokens=0), "data.batch_tokens must be >= 1, found 0"),
    (lambda: DataConfig(path="x", max_batch_size=0), "data.max_batch_size must be >= 1, found 0"),
    (lambda: DataConfig(path="x", num_workers=-1), "data.num_workers must be >= 0, found -1"),
    (lambda: DataConfig(path="x", max_paragraphs=0), "data.max_paragraphs must be >= 1, found 0"),
    (lambda: ModelConfig(dropout=1.0), "model.dropout must be in [0, 1), found 1.0"),
    (lambda: ModelConfig(dropout=-0.1), "model.dropout must be in [0, 1), found -0.1"),
    (lambda: ModelConfig(attention_dropout=1.0), "model.attention_dropout must be in [0, 1) or null, found 1.0"),
    (lambda: ModelConfig(heads=0), "model.heads must be >= 1, found 0"),
    (lambda: ModelConfig(inter_heads=0), "model.inter_heads must be >= 1, found 0"),
    (lambda: ModelConfig(d_model=-8), "model.d_model must be >= 1, found -8"),
    (lambda: ModelConfig(ff_size=0), "model.ff_size must be >= 1, found 0"),
    (lambda: ModelConfig(encoder_layers=0, inter_layers=[]), "model.encoder_layers must be >= 1, found 0"),
    (lambda: ModelConfig(max_positions=0), "model.max_positions must be >= 1, found 0"),
]


@pytest.mark.parametrize(("build", "message"), REFUSED, ids=[message.split(" must")[0] + f"-{i}"
                                                             for i, (_, message) in enumerate(REFUSED)])
def test_a_value_that_cannot_be_right_is_refused_by_its_dataclass(build, message):
    with pytest.raises(ValueError) as error:
        build()
    assert str(error.value).startswith(message)


def test_the_presets_optimizer_options_pass_the_checks():
    """Every option the checks read, at its value in ``conf/optim/presumm.yaml`` (two parameter groups)."""
    config = _optim(optimizer={"betas": [0.9, 0.999]}, scheduler={"lr": 0.2, "warmup_steps": 10000, "d_model": 1},
                    pretrained_group={"scheduler": {"lr": 0.002, "warmup_steps": 20000}})
    assert config.pretrained_group.scheduler == {"lr": 0.002, "warmup_steps": 20000}
