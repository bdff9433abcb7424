"""``hiersum export`` in process: a run directory's best checkpoint with its decoding options, metrics and commands
in the card; an output that is an input, a file, or a non-empty directory refused before anything is written; a
failed export leaving no partial directory and an earlier one unchanged."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

import hiersum.commands.export as export_module
from hiersum.checkpoints import load_network
from hiersum.commands.export import export
from hiersum.config import ExportConfig
from hiersum.errors import UsageError
from tests.helpers.checkpoints import digest, save_summarizer_checkpoint
from tests.helpers.config import compose_config

METRICS = {"best_checkpoint": "outputs/train/x/checkpoints/epoch=1-step=8.ckpt", "validation_loss": 2.5,
           "test": {"model": {"rouge1": 41.234, "rouge2": 12.5, "rougeL": 30.0, "rougeLsum": 38.0, "bleu": 9.75,
                              "perplexity": 3.5},
                    "lead": {"rouge1": 25.0, "rouge2": 7.0, "rougeL": 18.0, "rougeLsum": 23.0, "bleu": 5.0}}}


@pytest.fixture(scope="module")
def template_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory as ``hiersum train`` leaves it: two checkpoints, metrics.json naming the best, .hydra/."""
    run = tmp_path_factory.mktemp("runs") / "run"
    (run / "checkpoints").mkdir(parents=True)
    save_summarizer_checkpoint(run / "checkpoints" / "epoch=1-step=8.ckpt")
    shutil.copy(run / "checkpoints" / "epoch=1-step=8.ckpt", run / "checkpoints" / "last.ckpt")
    (run / "metrics.json").write_text(json.dumps(METRICS))
    (run / ".hydra").mkdir()
    (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump({"seed": 7, "decode": {"beam_size": 2,
                                                                                     "max_length": 12}}))
    (run / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(["model=tiny", "trainer.max_epochs=2"]))
    return run


@pytest.fixture()
def run(template_run: Path, tmp_path: Path) -> Path:
    return shutil.copytree(template_run, tmp_path / "run")


def config(checkpoint: Path, output: Path, *, overwrite: bool = False) -> ExportConfig:
    return ExportConfig(task_name="export", checkpoint=str(checkpoint), output=str(output), overwrite=overwrite,
                        paths={})


def test_a_run_directory_exports_its_best_checkpoint_with_its_decoding_options_and_metrics(run, tmp_path, capsys):
    cfg = compose_config("export", [f"checkpoint={run}", f"output={tmp_path / 'model'}"], tmp_path / "hydra")
    result = export(cfg)
    assert result.checkpoint == run / "checkpoints" / "epoch=1-step=8.ckpt"
    assert f"exported {result.checkpoint} to {tmp_path / 'model'}" in capsys.readouterr().err
    generation = json.loads((result.directory / "generation_config.json").read_text())
    assert (generation["beam_size"], generation["max_length"], generation["alpha"]) == (2, 12, 0.6)
    card = (result.directory / "README.md").read_text()
    assert card.startswith("---\nlibrary_name: hiersum\n")
    assert "| test | model | 41.23 | 12.50 | 30.00 | 38.00 | 9.75 | 3.50 |" in card
    assert "| test | lead | 25.00 |" in card and "scored with epoch=1-step=8.ckpt" in card
    assert "`hiersum train model=tiny trainer.max_epochs=2`" in card and "seed: 7" in card
    assert f"`hiersum export checkpoint={run} output={tmp_path / 'model'}`" in card
    assert "| encoder | hierarchical |" in card and "| parameters | " in card
    assert "Fine-tuned from" not in card  # a network trained from scratch
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []  # no staging left
    umask = os.umask(0)
    os.umask(umask)
    modes = {path.name: path.stat().st_mode & 0o777 for path in [result.directory, *result.directory.iterdir()]}
    assert modes == {"model": 0o777 & ~umask, **{name: 0o666 & ~umask for name in modes if name != "model"}}


def test_the_card_of_a_fine_tuned_run_says_what_it_started_from(run, tmp_path):
    start = {"path": "/runs/base/checkpoints/last.ckpt", "sha256": "ab" * 32}
    (run / "metrics.json").write_text(json.dumps({**METRICS, "init_from": start}))
    export(config(run, tmp_path / "model"))
    card = (tmp_path / "model" / "README.md").read_text()
    assert f"Fine-tuned from `{start['path']}` (SHA-256 `{start['sha256']}`): its weights, model settings" in card


def test_a_checkpoint_outside_a_run_exports_with_the_default_decoding_options(tmp_path):
    checkpoint = save_summarizer_checkpoint(tmp_path / "tiny.ckpt")
    directory = export(config(checkpoint, tmp_path / "out" / "model")).directory
    assert json.loads((directory / "generation_config.json").read_text())["beam_size"] == 4
    assert "No metrics recorded" in (directory / "README.md").read_text()
    assert load_network(directory).model.vocab_size == load_network(checkpoint).model.vocab_size


@pytest.mark.parametrize("output", ["checkpoints/last.ckpt", "checkpoints", ".", "metrics.json"],
                         ids=["the checkpoint", "its folder", "the run", "the run's metrics"])
def test_an_output_that_holds_an_input_is_refused_before_anything_is_written(output, run, tmp_path):
    checkpoint = run / "checkpoints" / "last.ckpt"
    before = {path: digest(path) for path in run.rglob("*") if path.is_file()}
    with pytest.raises(UsageError, match=r"is the same file as .*: writing it would destroy that input"):
        export(config(checkpoint, run / output, overwrite=True))
    assert {path: digest(path) for path in run.rglob("*") if path.is_file()} == before


def test_an_output_that_is_the_input_directory_is_refused(run, tmp_path):
    directory = export(config(run, tmp_path / "model")).directory
    with pytest.raises(UsageError, match="is the same file as"):
        export(config(directory, directory, overwrite=True))


def test_a_non_empty_output_needs_overwrite_which_replaces_it_whole(run, tmp_path):
    output = tmp_path / "model"
    output.mkdir()
    (output / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="is a directory that is not empty; .*overwrite=true"):
        export(config(run, output))
    assert (output / "notes.txt").read_text() == "mine"
    export(config(run, output, overwrite=True))
    assert not (output / "notes.txt").exists() and (output / "model.safetensors").is_file()
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="is a file; expected a directory"):
        export(config(run, tmp_path / "file", overwrite=True))


def test_a_failed_export_leaves_an_earlier_directory_unchanged_and_nothing_partial(run, tmp_path, monkeypatch):
    output = export(config(run, tmp_path / "model")).directory
    before = {path.name: digest(path) for path in output.iterdir()}

    def fail_midway(summarizer, directory, notes):
        (Path(directory) / "model.safetensors").write_bytes(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export_module, "save_model_directory", fail_midway)
    with pytest.raises(OSError, match="No space left"):
        export(config(run, output, overwrite=True))
    assert {path.name: digest(path) for path in output.iterdir()} == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["model", "run"]
