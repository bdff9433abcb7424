"""Shared fixtures: a tiny native-JSONL corpus cut from the embedded sample, the one tiny config of the
suite (:func:`compose_config` / the ``tiny_cfg`` fixture: the real ``conf/`` composed with
:data:`TINY_OVERRIDES`), and the model tests' network and ragged batch."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from hiersum.cli.common import CONFIG_DIR
from hiersum.config import ModelConfig, register_configs, typed_config
from hiersum.data.cache import PREPARED_DIR_VARIABLE
from hiersum.model import HierSum

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_DIR = PROJECT_ROOT / "data" / "sample"
SHARED_DIR = PROJECT_ROOT.parent / "shared"

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


def train_overrides(corpus: Path | str, *extra: str) -> list[str]:
    """:data:`TINY_OVERRIDES` on ``corpus`` with a CSV logger, then ``extra`` (an ``extra`` option of a
    key set here, e.g. ``model=flat_tiny`` or ``data.path=...``, replaces it)."""
    given = {option.split("=")[0] for option in extra}
    defaults = [*TINY_OVERRIDES, f"data.path={corpus}", "logger=csv"]
    return [*(option for option in defaults if option.split("=")[0] not in given), *extra]


TinyConfig = Callable[..., DictConfig]


@pytest.fixture()
def tiny_cfg(tiny_corpus: Path, tmp_path: Path) -> TinyConfig:
    """``tiny_cfg(*overrides, name="train", output_dir=tmp_path / "run")``: the composed config of an
    entry point on the tiny corpus (train: with :func:`train_overrides`; evaluate: ``data.path`` set)."""

    def make(*overrides: str, name: str = "train", output_dir: Path | None = None) -> DictConfig:
        if name == "train":
            options = train_overrides(tiny_corpus, *overrides)
        elif name == "evaluate":
            options = [f"data.path={tiny_corpus}", *overrides]
        else:
            options = list(overrides)
        return compose_config(name, options, output_dir or tmp_path / "run")

    return make


@functools.cache
def _tiny_model() -> ModelConfig:
    return typed_config(compose_config("train", ["model=tiny"], "unused").model)


def tiny_model_config(**changes) -> ModelConfig:
    """``conf/model/tiny.yaml`` as a :class:`ModelConfig` (dropout 0), with ``changes``."""
    return replace(_tiny_model(), **{"dropout": 0.0, **changes})


@pytest.fixture(autouse=True)
def single_thread() -> Iterator[None]:
    """Tiny tensors: one intra-op thread is fastest, and safe from OpenMP stalls under load."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session", autouse=True)
def prepared_corpora(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The prepared corpora of the session (``$HIERSUM_PREPARED_DIR``, inherited by the CLI subprocesses)
    go to a temporary folder, not the user's cache."""
    folder = tmp_path_factory.mktemp("prepared")
    saved = os.environ.get(PREPARED_DIR_VARIABLE)
    os.environ[PREPARED_DIR_VARIABLE] = str(folder)
    yield folder
    if saved is None:
        os.environ.pop(PREPARED_DIR_VARIABLE, None)
    else:
        os.environ[PREPARED_DIR_VARIABLE] = saved


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first lines of each sample split (train 40, validation/test 8) in a temp folder."""
    folder = tmp_path_factory.mktemp("tiny_corpus")
    for split, n in (("train", 40), ("validation", 8), ("test", 8)):
        with open(SAMPLE_DIR / f"{split}.jsonl", encoding="utf-8") as source:
            lines = [next(source) for _ in range(n)]
        (folder / f"{split}.jsonl").write_text("".join(lines), encoding="utf-8")
    return folder


@pytest.fixture
def model() -> HierSum:
    """The model tests' network (:func:`tests.model_testkit.make_model`)."""
    from tests.model_testkit import make_model  # which builds on tiny_model_config of this module

    return make_model()


@pytest.fixture
def batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A ragged batch (src [3, 4, 6], its mask, tgt_in [3, 7]) of :func:`tests.model_testkit.make_batch`."""
    from tests.model_testkit import make_batch

    return make_batch()
