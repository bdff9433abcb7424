"""Shared fixtures: the tiny corpus (:func:`tests.helpers.corpus.write_tiny_corpus`), the tiny config of the
suite on it (``tiny_cfg``, :mod:`tests.helpers.config`), a temporary folder for the prepared corpora, and the
model tests' network and ragged batch (:mod:`tests.helpers.model`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from omegaconf import DictConfig

from hiersum.data.cache import PREPARED_DIR_VARIABLE
from hiersum.model import HierSum
from tests.helpers.config import TinyConfig, compose_config, train_overrides
from tests.helpers.corpus import write_tiny_corpus
from tests.helpers.model import make_batch, make_model


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
    return write_tiny_corpus(tmp_path_factory.mktemp("tiny_corpus"))


@pytest.fixture
def model() -> HierSum:
    """The model tests' network (:func:`tests.helpers.model.make_model`)."""
    return make_model()


@pytest.fixture
def batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A ragged batch (src [3, 4, 6], its mask, tgt_in [3, 7]) of :func:`tests.helpers.model.make_batch`."""
    return make_batch()
