"""``hiersum train trainer.NAME=VALUE``: every Trainer argument is an option of the typed ``trainer`` group (no
``+``) that reaches the Trainer; a value of the wrong type, one Lightning would refuse and a value of the other
groups that cannot be right are one line and exit status 2 before anything is trained."""

from __future__ import annotations

import pytest

from hiersum.cli.main import main
from hiersum.commands.train import train
from tests.helpers.cli import assert_usage_error, run_in_process, run_main, train_args
from tests.helpers.probes import probe_overrides, read_probes

WRONG_TYPE = [("trainer.max_steps=abc", "could not be converted to Integer"),
              ("trainer.limit_train_batches=many", "incompatible with type hint"),
              ("trainer.fast_dev_run=1.5", "incompatible with type hint"),
              ("trainer.num_sanity_val_steps=all", "could not be converted to Integer")]


@pytest.mark.parametrize(("option", "expected"), WRONG_TYPE, ids=[option for option, _ in WRONG_TYPE])
def test_a_trainer_option_of_the_wrong_type_is_refused_at_composition(option, expected, tmp_path, monkeypatch,
                                                                      capsys):
    code, stderr = run_main("train", [option, f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch, capsys)
    assert_usage_error(code, stderr, "hiersum-train: error:", option, expected)


def test_a_refused_option_is_a_usage_error_after_another_command_ran_in_the_process(tiny_corpus, tmp_path,
                                                                                   monkeypatch, capsys):
    """A task that ended (here in a usage error of its own) leaves nothing behind that turns the next
    command's composition error into a traceback (CI once ran these tests after such a task, in one worker)."""
    with pytest.raises(SystemExit) as exit_info:
        main(["train", *train_args(tiny_corpus, tmp_path / "first", "model.heads=0"), "hydra/job_logging=none",
              "hydra/hydra_logging=none"])
    assert exit_info.value.code == 2
    capsys.readouterr()
    code, stderr = run_main("train", ["trainer.max_steps=abc", f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch,
                            capsys)
    assert_usage_error(code, stderr, "hiersum-train: error:", "trainer.max_steps=abc", "could not be converted")


REFUSED = [
    ("trainer.val_check_interval=x", "trainer.val_check_interval must be an int >= 0 or a float in [0.0, 1.0] or a "
                                     "duration 'DD:HH:MM:SS', found 'x'"),
    ("trainer.limit_train_batches=1.5", "trainer.limit_train_batches must be an int >= 0 or a float in [0.0, 1.0], "
                                        "found 1.5"),
    ("trainer.precision=64bit", "Error merging override trainer.precision=64bit; Invalid value '64bit', expected "
                                "one of [transformer-engine, "),
    ("trainer.max_epochs=-5", "trainer.max_epochs must be >= -1, found -5"),
    ("trainer.max_steps=-3", "trainer.max_steps must be >= -1, found -3"),
    ("trainer.accelerator=tpu2", "trainer.accelerator must be one of auto, cpu, cuda, gpu, mps, tpu, found 'tpu2'"),
    ("optim.optimizer.lr=0", "optim.optimizer.lr must be a number > 0, found 0"),
    ("optim.scheduler.warmup_steps=-10", "optim.scheduler.warmup_steps must be an integer >= 1, found -10"),
    ("data.max_batch_size=0", "data.max_batch_size must be >= 1, found 0"),
    ("model.heads=0", "model.heads must be >= 1, found 0"),
    ("decode.min_length_per_source_token=-0.5", "decode.min_length_per_source_token must be >= 0, found -0.5"),
]


@pytest.mark.parametrize(("option", "message"), REFUSED, ids=[option for option, _ in REFUSED])
def test_a_value_that_cannot_be_right_is_a_usage_error_before_training(option, message, tiny_corpus, tmp_path,
                                                                     capsys):
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        main(["train", *train_args(tiny_corpus, run_dir, option), "hydra/job_logging=none",
              "hydra/hydra_logging=none"])
    assert_usage_error(exit_info.value.code, capsys.readouterr().err, f"hiersum train: error: {message}")
    assert not (run_dir / "tokenizer").exists()


@pytest.mark.slow
def test_trainer_options_without_plus_reach_the_trainer(tiny_cfg, tmp_path):
    """Outside ``debug=fast_dev_run``, ``trainer.max_steps=2`` trains exactly 2 steps."""
    cfg = tiny_cfg("callbacks=none", "eval_split=null", *probe_overrides(tmp_path / "probe"), "trainer.max_steps=2",
                   "trainer.limit_train_batches=3", "trainer.val_check_interval=2", "trainer.limit_val_batches=1",
                   "trainer.precision=32", "trainer.num_sanity_val_steps=0")
    train(cfg)
    probe = read_probes(tmp_path / "probe")[0]
    assert (probe["global_step"], probe["limit_train_batches"], probe["val_check_interval"], probe["precision"]) == (
        2, 3, 2, "32-true")


SUBPROCESS = [("optim.scheduler.lr=-1", "optim.scheduler.lr must be a number > 0, found -1"),
              ("trainer.precision=64bit", "Error merging override trainer.precision=64bit; Invalid value '64bit', "
                                          "expected one of [transformer-engine, "),
              ("trainer.max_steps=abc", "Error merging override trainer.max_steps=abc; Value 'abc' of type 'str' "
                                        "could not be converted to Integer")]


@pytest.mark.slow
@pytest.mark.parametrize(("option", "message"), SUBPROCESS, ids=[option for option, _ in SUBPROCESS])
def test_hiersum_train_refuses_a_bad_value_in_one_line(option, message, tiny_corpus, tmp_path, monkeypatch, capsys):
    """The ``hiersum`` script's ``main`` in process (a real ``hiersum train`` process that stops in one line:
    tests/commands/test_train_stopped.py; one Hydra refuses: tests/commands/test_train.py)."""
    run_dir = tmp_path / "run"
    result = run_in_process("hiersum", ["train", *train_args(tiny_corpus, run_dir, option)], monkeypatch, capsys)
    assert_usage_error(result.returncode, result.stderr, f"hiersum train: error: {message}")
    assert not (run_dir / "tokenizer").exists() and not (run_dir / "checkpoints").exists()
