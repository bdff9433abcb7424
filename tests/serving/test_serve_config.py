"""``hiersum serve``'s options: ``ServeConfig`` refuses what LitServe cannot take, in one line naming the option,
and the command stops with exit status 2 before a server starts (a bad option, a checkpoint that does not load)."""

from __future__ import annotations

import sys

import pytest

from hiersum.cli.main import main
from hiersum.config import ServeConfig, ServeLimits


@pytest.mark.parametrize(("changes", "message"), [
    ({"port": 80}, "port must be in [1024, 65535], found 80"),
    ({"host": "localhost"}, "host must be one of '127.0.0.1', '0.0.0.0', '::', found 'localhost'"),
    ({"accelerator": "tpu"}, "accelerator must be one of 'auto', 'cpu', 'cuda', 'mps', found 'tpu'"),
    ({"max_batch_size": 0}, "max_batch_size must be >= 1, found 0"),
    ({"max_body_bytes": 0}, "max_body_bytes must be >= 1, found 0"),
    ({"shutdown_timeout": 0}, "batch_timeout must be >= 0, timeout and shutdown_timeout > 0; found 0.05, 60.0 and 0"),
    ({"max_queue": 0}, "max_queue must be >= 1, found 0"),
    ({"log_level": "loud"}, "log_level must be one of 'critical', 'error'"),
])
def test_a_bad_option_is_refused_naming_it(changes, message):
    with pytest.raises(ValueError, match="^" + message.replace("[", r"\[").replace("(", r"\(")):
        ServeConfig(checkpoint="x.ckpt", **changes)


def test_a_limit_below_one_is_refused():
    with pytest.raises(ValueError, match=r"limits.beam_size must be >= 1, found 0"):
        ServeLimits(beam_size=0)


@pytest.mark.parametrize(("options", "expected"), [
    (["checkpoint={tmp}/missing.ckpt"], "missing.ckpt"),
    (["checkpoint={tmp}/missing.ckpt", "port=80"], "port must be in [1024, 65535], found 80"),
    (["checkpoint={tmp}/missing.ckpt", "host=0.0.0.0"], "set api_key=KEY (or the environment variable "
                                                        "LIT_SERVER_API_KEY), or allow_unauthenticated=true"),
])
def test_the_command_stops_in_one_line_before_serving(options, expected, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("LIT_SERVER_API_KEY", raising=False)
    argv = ["serve", *(option.format(tmp=tmp_path) for option in options), f"hydra.run.dir={tmp_path / 'run'}",
            "hydra/job_logging=none", "hydra/hydra_logging=none"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    stderr = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert len(stderr.strip().splitlines()) == 1 and expected in stderr and "serving" not in stderr, stderr


def test_without_litserve_the_command_says_which_extra_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "litserve", None)  # import litserve raises ModuleNotFoundError
    monkeypatch.delitem(sys.modules, "hiersum.serving.server", raising=False)
    monkeypatch.delitem(sys.modules, "hiersum.serving.api", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", f"checkpoint={tmp_path}/m.ckpt", f"hydra.run.dir={tmp_path / 'run'}",
              "hydra/job_logging=none", "hydra/hydra_logging=none"])
    stderr = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(stderr.strip().splitlines()) == 1, stderr
    assert "pip install -e '.[serve]'" in stderr
