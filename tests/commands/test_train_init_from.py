"""``hiersum train init_from=``: fine-tuning runs of the tiny model from the session's trained run (a checkpoint, and
the model directory ``hiersum export`` makes of it). The first batch's loss is the source network's on that batch,
the step, optimizer and data start afresh, the run records what it started from (checkpoints, metrics.json, the
exported model card); a part the command line adds starts fresh with one log line; a shape change, a tokenizer
option, ``ckpt_path`` beside it and a path that is no starting point are refused in one line, before any data is
prepared; the options are typed against the checkpoint's model settings, not the preset's. The selection of the
settings and the weights, without a Trainer: tests/training/test_init_from.py."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import torch

from hiersum.commands.composed import command_config
from hiersum.commands.export import export
from hiersum.commands.train import composed_fine_tuning, train
from hiersum.config import TrainConfig
from hiersum.errors import UsageError
from hiersum.inference.resumable_output import checkpoint_sha256
from hiersum.training.init_from import fine_tuning
from tests.helpers.checkpoints import save_summarizer_checkpoint
from tests.helpers.cli import assert_usage_error, run_in_process, train_args
from tests.helpers.config import compose_config, tiny_model_config, train_overrides
from tests.helpers.probes import probe_overrides, read_probes, starting_loss_overrides

SHORT = ["trainer.max_steps=2", "trainer.log_every_n_steps=1", "trainer.num_sanity_val_steps=0"]
"""Two steps of fine-tuning, no validation before them."""


def cli_args(corpus: Path, run_dir: Path, *extra: str) -> list[str]:
    """``hiersum-train`` arguments of a tiny run, less the tokenizer option (a fine-tuning run refuses it: the
    tokenizer is the checkpoint's)."""
    return [*(option for option in train_args(corpus, run_dir) if not option.startswith("tokenizer.")), *extra]


@pytest.mark.slow
def test_fine_tuning_starts_from_the_checkpoints_network_and_records_it(checkpoint, tiny_corpus, tmp_path):
    run_dir, probe = tmp_path / "tuned", tmp_path / "probe"
    metrics = train(compose_config("train", train_overrides(
        tiny_corpus, *SHORT, f"init_from={checkpoint}", "data.limit_eval_examples=4",
        *starting_loss_overrides(probe, checkpoint)), run_dir))

    start = json.loads((probe / "start.json").read_text())
    assert start["global_step"] == 0  # a new run: step 0, not the checkpoint's
    torch.testing.assert_close(start["run_loss"], start["source_loss"], rtol=1e-6, atol=0)
    source = torch.load(checkpoint, weights_only=True)
    tuned = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True)
    assert source["global_step"] > 2 and tuned["global_step"] == 2
    loader = tuned["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]
    assert (loader["epoch"], loader["consumed"]) == (0, 2)  # the data from its first batch
    adam = next(iter(tuned["optimizer_states"][0]["state"].values()))
    assert int(adam["step"]) == 2  # a new optimizer: two updates, not the checkpoint's count plus two
    assert tuned["hyper_parameters"]["model"] == source["hyper_parameters"]["model"]
    tokenizer = checkpoint.parent.parent / "tokenizer" / "tokenizer.json"  # the source run's, as it saved it
    assert (run_dir / "tokenizer" / "tokenizer.json").read_text() == tokenizer.read_text()  # taken, not trained

    record = {"path": str(checkpoint), "sha256": checkpoint_sha256(checkpoint)}
    assert metrics["init_from"] == record
    assert json.loads((run_dir / "metrics.json").read_text())["init_from"] == record
    assert tuned["hiersum"]["init_from"] == record and source["hiersum"].get("init_from") is None
    export(compose_config("export", [f"checkpoint={run_dir}", f"output={tmp_path / 'model'}"], tmp_path / "hydra"))
    card = (tmp_path / "model" / "README.md").read_text()
    assert f"Fine-tuned from `{checkpoint}` (SHA-256 `{record['sha256']}`)" in card


@pytest.mark.slow
def test_an_exported_directory_starts_a_run_and_an_added_part_starts_fresh(checkpoint, tiny_corpus, tmp_path,
                                                                           monkeypatch, capsys, caplog):
    directory = tmp_path / "exported"
    export(compose_config("export", [f"checkpoint={checkpoint}", f"output={directory}"], tmp_path / "hydra"))
    run_dir, probe = tmp_path / "tuned", tmp_path / "probe"
    with caplog.at_level(logging.INFO, logger="hiersum"):
        ran = run_in_process("hiersum-train", cli_args(
            tiny_corpus, run_dir, *SHORT, "eval_split=null", f"init_from={directory}", "model.copy_attention=true",
            *probe_overrides(probe)), monkeypatch, capsys)
    assert ran.returncode == 0, ran.stderr[-3000:]
    lines = [record.getMessage() for record in caplog.records if "start fresh" in record.getMessage()]
    assert len(lines) == 1 and lines[0].startswith(f"init_from={directory}: model.copy_attention=true adds parts "
                                                   "the checkpoint lacks, which start fresh: "), lines
    assert "copy_attention.switch.weight" in lines[0], lines[0]
    assert read_probes(probe)[0]["copy_attention"] is True
    tuned = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True)
    assert tuned["hyper_parameters"]["model"]["copy_attention"] is True and tuned["global_step"] == 2
    record = {"path": str(directory), "sha256": checkpoint_sha256(directory)}
    assert tuned["hiersum"]["init_from"] == record

    caplog.clear()  # the same command with ckpt_path=last (a stopped run's resume command) continues the run
    with caplog.at_level(logging.INFO, logger="hiersum"):
        ran = run_in_process("hiersum-train", cli_args(
            tiny_corpus, run_dir, *SHORT, "eval_split=null", f"init_from={directory}", "model.copy_attention=true",
            "trainer.max_steps=3", "ckpt_path=last"), monkeypatch, capsys)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert not [record for record in caplog.records if "start fresh" in record.getMessage()]
    assert any(record.getMessage().startswith("resuming from ") for record in caplog.records)
    continued = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True)
    assert continued["global_step"] == 3 and continued["hiersum"]["init_from"] == record


@pytest.mark.parametrize(("options", "expected"), [
    (["model.d_model=32"], ["model.d_model=32 (the checkpoint's: 16) would change the network the checkpoint holds"]),
    (["model.decoder_layers=2", "model.dropout=0.1"], ["model.decoder_layers=2 (the checkpoint's: 1)"]),
    (["tokenizer.vocab_size=500"], ["the tokenizer is the checkpoint's; tokenizer.vocab_size does not apply"]),
    (["ckpt_path=elsewhere.ckpt"], ["and ckpt_path=elsewhere.ckpt are exclusive"]),
])
def test_what_a_fine_tuning_run_cannot_change_is_refused_in_one_line(options, expected, tiny_corpus, tmp_path,
                                                                     monkeypatch, capsys):
    source = save_summarizer_checkpoint(tmp_path / "source.ckpt")
    run_dir = tmp_path / "run"
    ran = run_in_process("hiersum-train", cli_args(tiny_corpus, run_dir, f"init_from={source}", *options),
                         monkeypatch, capsys)
    assert_usage_error(ran.returncode, ran.stderr, f"init_from={source}", *expected)
    assert not run_dir.exists()  # refused before anything was prepared or written


def typed(cfg) -> TrainConfig:
    return command_config(cfg, TrainConfig, usage="hiersum train ...")


def test_the_composed_config_is_typed_with_the_trained_networks_settings(tmp_path):
    """``model.coverage=true`` given for a checkpoint with copy attention, the preset composed under it (``model=tiny``)
    without: the typed config checks the settings the run trains (the checkpoint's copy attention), not the
    preset's; for a checkpoint without copy attention the refusal stays."""
    with_copy = save_summarizer_checkpoint(tmp_path / "copy.ckpt", tiny_model_config(copy_attention=True))
    cfg = compose_config("train", train_overrides(tmp_path, f"init_from={with_copy}", "model.coverage=true",
                                                  "model.dropout=0.2"), tmp_path / "run")
    with pytest.raises(UsageError, match=r"^model.coverage=true is the copy attention's coverage"):
        typed(cfg)  # the preset's copy_attention=false
    composed, start = composed_fine_tuning(cfg, {"coverage", "dropout"})
    expected = tiny_model_config(copy_attention=True, coverage=True, dropout=0.2)
    assert typed(composed).model == expected
    tuned, started = fine_tuning(typed(composed), None, {"coverage", "dropout"}, start=start)
    assert tuned.model == expected and start is not None and started is start  # read once, by the command
    assert cfg.model.copy_attention is False  # the composed config is not changed in place

    without_copy = save_summarizer_checkpoint(tmp_path / "plain.ckpt")
    cfg.init_from = str(without_copy)
    with pytest.raises(UsageError, match=r"^model.coverage=true is the copy attention's coverage"):
        typed(composed_fine_tuning(cfg, {"coverage"})[0])
    for init_from in (str(tmp_path / "missing.ckpt"), None):  # missing: refused by fine_tuning, which reads it then
        cfg.init_from = init_from
        unchanged, start = composed_fine_tuning(cfg, {"coverage"})
        assert unchanged is cfg and start is None


def experiment_args(corpus: Path, run_dir: Path, model_fields: str, *extra: str) -> list[str]:
    """:func:`cli_args` with the tiny model chosen by an experiment of the user's own, ``experiment=tuning``: a config
    folder beside ``run_dir`` holding ``experiment/tuning.yaml``, which chooses ``override /model: tiny`` and sets
    ``model_fields`` (a YAML flow mapping), added by ``hydra.searchpath``. The command line names no model preset
    (``model=tiny`` would give every model field)."""
    folder = run_dir.parent / "conf"
    (folder / "experiment").mkdir(parents=True, exist_ok=True)
    (folder / "experiment" / "tuning.yaml").write_text(
        f"# @package _global_\ndefaults:\n  - override /model: tiny\nmodel: {model_fields}\n")
    return [*(option for option in cli_args(corpus, run_dir) if option != "model=tiny"), "experiment=tuning",
            f"hydra.searchpath=[file://{folder}]", *extra]


@pytest.mark.slow
@pytest.mark.parametrize(("command_line", "dropout"), [([], 0.25), (["model.dropout=0.05"], 0.05)])
def test_an_experiment_files_model_fields_are_taken_under_the_command_lines(command_line, dropout, tiny_corpus,
                                                                            tmp_path, monkeypatch, capsys):
    source = save_summarizer_checkpoint(tmp_path / "source.ckpt")
    run_dir = tmp_path / "tuned"
    ran = run_in_process("hiersum-train", experiment_args(
        tiny_corpus, run_dir, "{dropout: 0.25}", *SHORT, "eval_split=null", f"init_from={source}", *command_line),
        monkeypatch, capsys)
    assert ran.returncode == 0, ran.stderr[-3000:]
    trained = torch.load(source, weights_only=True)["hyper_parameters"]["model"]
    tuned = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True)["hyper_parameters"]["model"]
    assert trained["dropout"] == 0.0 and tuned == {**trained, "dropout": dropout}


def test_a_shape_an_experiment_file_sets_is_refused_in_one_line(tiny_corpus, tmp_path, monkeypatch, capsys):
    source = save_summarizer_checkpoint(tmp_path / "source.ckpt")
    run_dir = tmp_path / "run"
    ran = run_in_process("hiersum-train", experiment_args(tiny_corpus, run_dir, "{d_model: 32}", f"init_from={source}"),
                         monkeypatch, capsys)
    assert_usage_error(ran.returncode, ran.stderr, f"init_from={source}",
                       "model.d_model=32 (the checkpoint's: 16) would change the network the checkpoint holds",
                       "out of the command line and the experiment file")
    assert not run_dir.exists()


def test_a_path_that_is_no_starting_point_is_refused_in_one_line(tiny_corpus, tmp_path, monkeypatch, capsys):
    missing = tmp_path / "missing.ckpt"
    ran = run_in_process("hiersum-train", cli_args(tiny_corpus, tmp_path / "run", f"init_from={missing}"),
                         monkeypatch, capsys)
    assert_usage_error(ran.returncode, ran.stderr, f"{missing}: checkpoint not found; expected a hiersum checkpoint",
                       "to fine-tune from (init_from=)")
