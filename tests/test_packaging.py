"""The configs ship in the wheel (``hiersum.conf``) and the default corpus is found outside a checkout.

The slow test builds the wheel from a copy of the source tree, installs it into a temporary folder
and composes each entry point's config from an empty folder with that copy imported. The fast tests
check the sample-corpus fallback of ``conf/data/sample.yaml`` (:mod:`hiersum.data.sample_location`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from hiersum.data import sample_generator, sample_location

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample"
SPLITS = list(sample_generator.DEFAULT_SIZES)
NOT_BUILT = {".git", ".venv", "venv", "build", "dist", "outputs", "lightning_logs", "data"}
"""Top-level folders the wheel build does not read (``data/``, the committed corpus, is not package data)."""


def _assert_committed_sample(folder: Path) -> None:
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{split}.jsonl" for split in SPLITS)
    for split in SPLITS:
        assert (folder / f"{split}.jsonl").read_bytes() == (SAMPLE / f"{split}.jsonl").read_bytes(), split


# --- the sample corpus outside a checkout -----------------------------------------------------------------


@pytest.fixture()
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


def test_missing_sample_is_generated_into_the_cache(tmp_path: Path, cache_home: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir = tmp_path / "empty"
    data_dir.mkdir()
    path = Path(sample_location.sample_dir(data_dir))
    assert path == cache_home / "hiersum" / f"sample-{sample_location.generator_fingerprint()}"
    _assert_committed_sample(path)
    assert [p.name for p in path.parent.iterdir()] == [path.name], "temporary folders were left behind"
    assert list(data_dir.iterdir()) == []

    def no_generation(*args, **kwargs):
        raise AssertionError("the cached corpus was generated again")

    monkeypatch.setattr(sample_generator, "write_sample_corpus", no_generation)
    assert sample_location.sample_dir(data_dir) == str(path)


def test_a_sample_folder_in_the_data_dir_is_used(tmp_path: Path, cache_home: Path) -> None:
    (tmp_path / "sample").mkdir()
    assert sample_location.sample_dir(tmp_path) == str(tmp_path / "sample")
    assert not cache_home.exists()


def test_cache_defaults_to_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert sample_location.cache_root() == tmp_path / ".cache" / "hiersum"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    assert sample_location.cache_root() == tmp_path / ".cache" / "hiersum"


def test_a_concurrent_generation_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process renames its corpus first: ours is discarded, theirs is used."""
    target = tmp_path / f"sample-{sample_location.generator_fingerprint()}"

    def racing_write(folder, **kwargs):
        (Path(folder) / "train.jsonl").write_text("ours\n")
        target.mkdir()
        (target / "train.jsonl").write_text("theirs\n")

    monkeypatch.setattr(sample_generator, "write_sample_corpus", racing_write)
    assert sample_location.cached_sample_dir(tmp_path) == target
    assert (target / "train.jsonl").read_text() == "theirs\n"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_the_sample_config_resolves_to_the_cache(tmp_path: Path, cache_home: Path) -> None:
    from hydra import compose, initialize_config_dir

    from hiersum.cli.common import CONFIG_DIR  # registers the resolver
    from hiersum.cli.config_store import register_configs

    register_configs()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose("train", overrides=[f"paths.data_dir={tmp_path / 'nothing'}"])
    _assert_committed_sample(Path(cfg.data.path))
    assert Path(cfg.data.path).parent == cache_home / "hiersum"


# --- the wheel ---------------------------------------------------------------------------------------------


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{args} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the source tree (the repository gets no build/), installed with --target."""
    tmp = tmp_path_factory.mktemp("packaging")
    source = tmp / "source"
    caches = shutil.ignore_patterns("*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache")

    def ignore(folder: str, names: list[str]) -> set[str]:
        return set(caches(folder, names)) | (NOT_BUILT & set(names) if Path(folder) == ROOT else set())

    shutil.copytree(ROOT, source, ignore=ignore)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "--quiet"]
    _run([*pip, "wheel", str(source), "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist")], cwd=tmp)
    [wheel] = (tmp / "dist").glob("hiersum-*.whl")
    _run([*pip, "install", "--no-deps", "--no-compile", "--target", str(tmp / "site"), str(wheel)], cwd=tmp)
    return tmp


def _env(installed: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "HYDRA"))}
    return {**env, "PYTHONPATH": str(installed / "site"), "XDG_CACHE_HOME": str(installed / "cache")}


@pytest.mark.slow
def test_the_wheel_holds_every_config_and_module(installed: Path) -> None:
    [wheel] = (installed / "dist").glob("hiersum-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    configs = {f"hiersum/conf/{p.relative_to(ROOT / 'conf').as_posix()}" for p in (ROOT / "conf").rglob("*.yaml")}
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "hiersum").rglob("*.py")}
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "hiersum").rglob("*.html")}  # hiersum serve's page
    assert len(configs) > 20 and configs <= names, sorted(configs - names)
    assert modules <= names, sorted(modules - names)
    assert pages and pages <= names, sorted(pages - names)


@pytest.mark.slow
def test_installed_entry_points_compose_their_configs(installed: Path) -> None:
    empty = installed / "empty"
    empty.mkdir()
    env = _env(installed)
    where = _run([sys.executable, "-c", "import hiersum, hiersum.conf; from hiersum.cli.common import CONFIG_DIR; "
                  "print(hiersum.__file__); print(CONFIG_DIR)"], cwd=empty, env=env).split()
    site = installed / "site"
    assert Path(where[0]).is_relative_to(site) and Path(where[1]) == site / "hiersum" / "conf", where

    # resolved in the empty folder, data=sample is the corpus generated into the cache
    train = _run([sys.executable, "-m", "hiersum", "train", "--cfg", "job", "--resolve"], cwd=empty, env=env)
    assert "d_model: 128" in train, train
    assert Path(yaml.safe_load(train)["paths"]["root_dir"]) == empty, train
    data_path = Path(yaml.safe_load(train)["data"]["path"])
    assert data_path.parent == installed / "cache" / "hiersum", train
    _assert_committed_sample(data_path)

    evaluate = _run([sys.executable, "-m", "hiersum", "evaluate", "--cfg", "job"], cwd=empty, env=env)
    assert "split: test" in evaluate and "bootstrap:" in evaluate, evaluate
    summarize = _run([sys.executable, "-m", "hiersum", "summarize", "--cfg", "job", "checkpoint=m.ckpt",
                      "input=docs.jsonl", "output=out.jsonl"], cwd=empty, env=env)
    expected = ("checkpoint: m.ckpt", "input: docs.jsonl", "output: out.jsonl")
    assert all(line in summarize.splitlines() for line in expected), summarize
    assert list(empty.iterdir()) == [], "composing a config wrote files"
