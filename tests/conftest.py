"""Shared fixtures: the tiny corpus (:func:`tests.helpers.corpus.write_tiny_corpus`), the tiny config of the
suite on it (``tiny_cfg``, :mod:`tests.helpers.config`), a temporary folder for the prepared corpora, and the
model tests' network and ragged batch (:mod:`tests.helpers.model`), and the tiny run trained once per session
that the commands and serving tests read (``trained``, ``trained_run``, ``checkpoint``:
:mod:`tests.helpers.trained`)."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
import torch
from omegaconf import DictConfig

from hiersum.data.prepared import PREPARED_DIR_VARIABLE
from hiersum.model import HierSum, flops
from hiersum.model.flops import ROOF_FILE_VARIABLE
from tests.helpers.bytecode import bytecode_header
from tests.helpers.config import TinyConfig, compose_config, device_overrides, tiny_train_config
from tests.helpers.corpus import write_tiny_corpus
from tests.helpers.device import full_float32, require_device
from tests.helpers.model import make_batch, make_model
from tests.helpers.shared import made_once
from tests.helpers.threads import one_thread
from tests.helpers.trained import checkpoint, trained, trained_run  # noqa: F401  (session fixtures)


def pytest_report_header() -> str | None:
    """A line where the venv's packages have lost their bytecode (:mod:`tests.helpers.bytecode`)."""
    return bytecode_header()


@pytest.fixture(scope="session")
def device() -> torch.device:
    """The device of the tests that build a model, its tensors, a training or a decoding run:
    ``$HIERSUM_TEST_DEVICE`` (``cpu`` by default; ``make gpu-check`` runs the suite with ``cuda``), the test skipped
    where it is a CUDA device this machine lacks. ``tests/test_device_fixture.py`` finds the test files that build
    one without it (or a fixture that follows it: ``model``, ``batch``, ``tiny_cfg``, ``trained``, ...)."""
    return require_device()


@pytest.fixture()
def exact_float32() -> Iterator[None]:
    """fp32 products in fp32 (TF32 off) during the test: the comparisons with the official code's CPU outputs
    (:func:`tests.helpers.device.full_float32`)."""
    with full_float32():
        yield


@pytest.fixture()
def tiny_cfg(tiny_corpus: Path, tmp_path: Path, device: torch.device) -> TinyConfig:
    """``tiny_cfg(*overrides, name="train", output_dir=tmp_path / "run")``: the composed config of an
    entry point on the tiny corpus (train: with :func:`train_overrides`; evaluate: ``data.path`` set), on
    the ``device`` of the tests (:func:`device_overrides`)."""

    def make(*overrides: str, name: str = "train", output_dir: Path | None = None) -> DictConfig:
        if name == "train":
            return tiny_train_config(tiny_corpus, output_dir or tmp_path / "run", device, *overrides)
        if name == "evaluate":
            options = [f"data.path={tiny_corpus}", *device_overrides(name, device), *overrides]
        else:
            options = [*device_overrides(name, device), *overrides]
        return compose_config(name, options, output_dir or tmp_path / "run")

    return make


@pytest.fixture(autouse=True)
def single_thread() -> Iterator[None]:
    """Tiny tensors: one intra-op thread is fastest, and safe from OpenMP stalls under load
    (:func:`tests.helpers.threads.one_thread`)."""
    with one_thread():
        yield


@contextlib.contextmanager
def environment_variable(name: str, value: str) -> Iterator[None]:
    """``$name`` set to ``value`` (inherited by subprocesses) while the block runs, then restored."""
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved


@pytest.fixture(scope="session", autouse=True)
def prepared_corpora(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The prepared corpora of the session (``$HIERSUM_PREPARED_DIR``, inherited by the CLI subprocesses)
    go to a temporary folder, not the user's cache."""
    folder = tmp_path_factory.mktemp("prepared")
    with environment_variable(PREPARED_DIR_VARIABLE, str(folder)):
        yield folder


@pytest.fixture(scope="session", autouse=True)
def cpu_roof_file(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator[Path]:
    """The CPU roof of the session's runs (``$HIERSUM_CPU_ROOF_FILE``, inherited by the CLI subprocesses) is
    measured once into a temporary file, not the user's cache; under pytest-xdist one file of the whole session
    (:func:`tests.helpers.shared.made_once`: each worker's own file measured each again)."""

    def make(folder: Path) -> None:
        with environment_variable(ROOF_FILE_VARIABLE, str(folder / ROOF_FILE)):
            measure_session_roofs()

    path = made_once(tmp_path_factory, worker_id, "cpu-roof", make) / ROOF_FILE
    with environment_variable(ROOF_FILE_VARIABLE, str(path)):
        yield path


ROOF_FILE = "cpu_roof.json"
SESSION_ROOF_DTYPES = (torch.float32, torch.bfloat16)
"""The roofs the tests' runs read: fp32, and bf16 (the bf16-mixed and bf16-true runs)."""


def measure_session_roofs() -> None:
    """The CPU roofs of the session's runs, at their one intra-op thread (the ``single_thread`` fixture's, and
    ``OMP_NUM_THREADS=1`` of the console scripts the tests start), measured in 2 rounds of 0.2 s instead of
    :func:`hiersum.model.flops.cpu_roof`'s 5 of 2 s: 1 s of the session, not 10 s a dtype in the first run
    of each (the MFU the tests check is only below 1); the thread count is :func:`made_once`'s. The measurement
    itself is tests/model/test_flops.py's."""
    with mock.patch.object(flops, "measure_matmul_roof",
                           functools.partial(flops.measure_matmul_roof, rounds=2, seconds=0.2)):
        for dtype in SESSION_ROOF_DTYPES:
            flops.cpu_roof(dtype)


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first lines of each sample split (train 40, validation/test 8) in a temp folder."""
    return write_tiny_corpus(tmp_path_factory.mktemp("tiny_corpus"))


@pytest.fixture
def model(device: torch.device) -> HierSum:
    """The model tests' network (:func:`tests.helpers.model.make_model`) on ``device``."""
    return make_model().to(device)


@pytest.fixture
def batch(device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A ragged batch (src [3, 4, 6], its mask, tgt_in [3, 7]) of :func:`tests.helpers.model.make_batch`, on
    ``device``."""
    return tuple(tensor.to(device) for tensor in make_batch())
