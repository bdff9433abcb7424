"""``trainer``: every argument of ``pytorch_lightning.Trainer``, its schema derived from ``Trainer.__init__``.

The fields, their defaults and their types are read from the signature of ``Trainer.__init__`` in the installed
Lightning's source when this module is imported (with :mod:`ast`: Lightning itself is not imported, so that an
action's ``--help`` answers at once), so a Lightning release that adds or changes an argument changes the schema
with it; nothing is copied by hand. A type built only of ``int``, ``float``, ``bool``, ``str`` and ``None`` (a
``Literal`` counts as the types of its values) is kept, so that OmegaConf refuses a wrong type at composition;
any other (a ``Logger``, a ``Strategy``, a ``timedelta``) becomes ``Any``, for a ``_target_`` node or a name.
:data:`NARROWED` types four fields narrower on purpose. :class:`TrainerChecks` then refuses at composition
what Lightning would refuse in its constructor.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import typing
from collections.abc import Mapping
from dataclasses import field, make_dataclass
from pathlib import Path
from typing import Any

from hiersum.config.checks import check, is_number
from hiersum.config.choices import Precision

TRAINER_ACCELERATORS = ("auto", "cpu", "cuda", "gpu", "mps", "tpu")
"""The accelerator names ``pytorch_lightning.Trainer`` takes (``auto``, ``gpu`` and its ``AcceleratorRegistry``)."""
TRAINER_PROFILERS = ("simple", "advanced", "pytorch", "xla")
"""The profiler names ``pytorch_lightning.Trainer`` takes."""
NARROWED: dict[str, Any] = {"precision": Precision | None, "max_time": str | None, "deterministic": bool | str | None,
                            "default_root_dir": str | None}
"""Fields typed narrower than (or, for a type alias, as) Lightning's signature: a precision as a
:data:`hiersum.config.Precision` (the one vocabulary of training and decoding; ``16`` becomes ``"16"``), a time
limit as ``DD:HH:MM:SS`` (not a ``timedelta`` or dict), ``deterministic`` as a bool or ``warn``
(``_LITERAL_WARN``), a folder as a string (``_PATH``)."""
_TRAINER_MINIMA = {"num_nodes": 1, "fast_dev_run": 0, "max_epochs": -1, "min_epochs": 0, "max_steps": -1,
                   "min_steps": 0, "check_val_every_n_epoch": 1, "num_sanity_val_steps": -1, "log_every_n_steps": 0,
                   "accumulate_grad_batches": 1, "gradient_clip_val": 0, "reload_dataloaders_every_n_epochs": 0}
"""The least value of each numeric Trainer argument (-1: no limit, or every batch of the sanity check)."""
_BATCH_LIMIT = "an int >= 0 or a float in [0.0, 1.0]"
_DURATION = "a duration 'DD:HH:MM:SS'"
_PLAIN = {"int": int, "float": float, "bool": bool, "str": str}


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


def schema_type(annotation: ast.expr) -> Any:
    """The OmegaConf field type of an annotation of Lightning's source: the union of its plain types (``Optional``
    and ``Union`` flattened, a ``Literal`` as the types of its values), or ``Any`` where a member is an object."""
    members = _plain_members(annotation)
    if members is None:
        return Any
    return typing.Union[tuple(members)] if len(members) > 1 else members[0]  # noqa: UP007 (built at run time)


def _plain_members(node: ast.expr) -> list[type] | None:
    """The plain types a type expression allows, or None when it allows anything else."""
    if isinstance(node, ast.Constant) and node.value is None:
        return [type(None)]
    if isinstance(node, ast.Name):
        return [_PLAIN[node.id]] if node.id in _PLAIN else None
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
        return None
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if node.value.id == "Literal":
        return list(dict.fromkeys(type(ast.literal_eval(item)) for item in items))
    if node.value.id not in ("Optional", "Union"):
        return None
    found: list[type] = []
    for item in items:
        members = _plain_members(item)
        if members is None:
            return None
        found += [member for member in members if member not in found]
    return found + [type(None)] if node.value.id == "Optional" and type(None) not in found else found


class TrainerChecks:
    """The values ``pytorch_lightning.Trainer`` would refuse, refused when the config is built (``__post_init__``)."""

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


def _trainer_init() -> ast.FunctionDef:
    """``Trainer.__init__`` of the installed Lightning, parsed from its source (Lightning is not imported)."""
    spec = importlib.util.find_spec("pytorch_lightning")
    if spec is None or spec.origin is None:
        raise ImportError("pytorch_lightning is not installed: hiersum's trainer schema is its Trainer's arguments")
    source = Path(spec.origin).parent / "trainer" / "trainer.py"
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef) and node.name == "Trainer":
            return next(item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "__init__")
    raise ImportError(f"no class Trainer in {source}")


def _trainer_fields() -> list[tuple[str, Any, Any]]:
    """(name, type, field) of every argument of ``Trainer.__init__`` (all keyword-only), after ``_target_``."""
    init = _trainer_init()
    fields: list[tuple[str, Any, Any]] = [("_target_", str, field(default="pytorch_lightning.Trainer"))]
    for argument, default in zip(init.args.kwonlyargs, init.args.kw_defaults, strict=True):
        kind = NARROWED.get(argument.arg) or schema_type(argument.annotation)
        fields.append((argument.arg, kind, field(default=ast.literal_eval(default))))
    return fields


TrainerConfig = make_dataclass("TrainerConfig", _trainer_fields(), bases=(TrainerChecks,))
TrainerConfig.__module__ = __name__
TrainerConfig.__doc__ = """Every argument of ``pytorch_lightning.Trainer`` with Lightning's default
(``conf/trainer/*.yaml``), set as ``trainer.NAME=VALUE`` (Lightning's documentation describes each); a
``_target_`` node for ``hydra.utils.instantiate``. Derived from ``Trainer.__init__`` (this module's
docstring); a value of the wrong type is refused at composition, one Lightning would refuse in
``__post_init__``."""
