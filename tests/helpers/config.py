"""The one tiny config of the suite: the real ``conf/`` composed as an entry point gets it, with
:data:`TINY_OVERRIDES` (the ``tiny_cfg`` fixture of ``tests/conftest.py`` composes it on the tiny corpus)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from hiersum.cli.common import CONFIG_DIR
from hiersum.cli.config_store import register_configs
from hiersum.commands.composed import typed_config
from hiersum.config import ModelConfig

TINY_OVERRIDES = [
    "model=tiny",
    "tokenizer.vocab_size=300",
    "data.max_paragraphs=6",
    "data.max_paragraph_tokens=24",
    "data.max_target_tokens=32",
    "data.batch_tokens=2048",
    "decode.beam_size=2",
    "decode.max_length=12",
    "decode.min_length=0",
]
"""The tiny training settings of every test that trains (``hiersum-train`` overrides)."""

TinyConfig = Callable[..., DictConfig]
"""The ``tiny_cfg`` fixture: ``tiny_cfg(*overrides, name="train", output_dir=None) -> DictConfig``."""


def compose_config(name: str, overrides: Sequence[str], output_dir: Path | str, *,
                   config_dir: str = CONFIG_DIR) -> DictConfig:
    """Config ``name`` (train, evaluate, summarize) composed from ``conf/`` as its entry point gets it:
    with the ``hydra`` node (``${hydra:...}`` resolves through :class:`HydraConfig`), the run directory
    ``paths.output_dir`` = ``output_dir``. A ``hydra.searchpath=[...]`` override adds config folders."""
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=config_dir, version_base="1.3"):
        cfg = compose(name, overrides=list(overrides), return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    OmegaConf.update(cfg, "paths.output_dir", str(output_dir), force_add=True)
    return cfg


def tiny_train_config(corpus: Path | str, output_dir: Path | str, device: torch.device, *overrides: str) -> DictConfig:
    """``hiersum-train``'s config on ``corpus`` (:func:`train_overrides`) on ``device`` (:func:`device_overrides`),
    then ``overrides``, its run directory ``output_dir``: what ``tiny_cfg`` composes, for the fixtures of a wider
    scope and a corpus of their own."""
    return compose_config("train", train_overrides(corpus, *device_overrides("train", device), *overrides), output_dir)


DEVICE_KEYS = {"train": "trainer.accelerator", "evaluate": "device", "summarize": "device", "rank": "device",
               "serve": "accelerator"}
"""The option of each entry point that picks its device."""


def device_overrides(name: str, device: torch.device) -> list[str]:
    """The options that run entry point ``name`` on ``device``: none on the CPU (the configs' default), else its
    :data:`DEVICE_KEYS` option (``trainer.accelerator=gpu`` for training, ``device=cuda:N`` for decoding)."""
    if device.type == "cpu" or name not in DEVICE_KEYS:
        return []
    value = "gpu" if name == "train" else "cuda" if name == "serve" else str(device)
    return [f"{DEVICE_KEYS[name]}={value}"]


def train_overrides(corpus: Path | str, *extra: str) -> list[str]:
    """:data:`TINY_OVERRIDES` on ``corpus`` with a CSV logger, then ``extra`` (an ``extra`` option of a
    key set here, e.g. ``model=flat_tiny`` or ``data.path=...``, replaces it)."""
    given = {option.split("=")[0] for option in extra}
    defaults = [*TINY_OVERRIDES, f"data.path={corpus}", "logger=csv"]
    return [*(option for option in defaults if option.split("=")[0] not in given), *extra]


@functools.cache
def _tiny_model() -> ModelConfig:
    return typed_config(compose_config("train", ["model=tiny"], "unused").model)


def tiny_model_config(**changes) -> ModelConfig:
    """``conf/model/tiny.yaml`` as a :class:`ModelConfig` (dropout 0), with ``changes``."""
    return replace(_tiny_model(), **{"dropout": 0.0, **changes})
