"""A training run stopped by Ctrl-C, SIGTERM or a batch too large for memory ends in one line: where it
stopped, the checkpoint a resume starts from, what to change, and the exact command that resumes; the
resumed run goes on from that checkpoint."""

from __future__ import annotations

import signal

import pytest
import torch

from hiersum.commands.train import train
from hiersum.errors import RunStopped
from tests.helpers.cli import run_cli, train_args


@pytest.fixture(autouse=True)
def restore_signals():
    """Lightning ignores SIGINT once it has handled a Ctrl-C: give this process its handlers back."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def stopped_run(tiny_cfg, how: str):
    return tiny_cfg("trainer.max_epochs=2", "callbacks.step_checkpoint.every_n_train_steps=1",
                    "+callbacks.stop._target_=tests.helpers.probes.StopAt", "+callbacks.stop.step=2",
                    f"+callbacks.stop.how={how}", "eval_split=null")


@pytest.mark.parametrize(("how", "status", "said"), [("ctrl-c", 130, "stopped by Ctrl-C at step 2"),
                                                     ("sigterm", 143, "stopped by SIGTERM at step")])
def test_a_stopped_fit_says_what_is_saved_and_how_to_resume(tiny_cfg, tmp_path, how, status, said):
    with pytest.raises(RunStopped) as info:
        train(stopped_run(tiny_cfg, how))
    message = str(info.value)
    assert info.value.exit_status == status and said in message and "\n" not in message
    assert f"the newest checkpoint is {tmp_path / 'run' / 'checkpoints'}" in message
    assert f"hydra.run.dir={tmp_path / 'run'}" in message and "ckpt_path=last" in message
    stopped_at = torch.load(message.split("the newest checkpoint is ")[1].split(";")[0], weights_only=True,
                            map_location="cpu")["global_step"]
    resumed = train(tiny_cfg("trainer.max_epochs=2", "eval_split=null", "ckpt_path=last"))
    assert resumed["best_checkpoint"]
    saved = torch.load(tmp_path / "run" / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    assert 1 <= stopped_at <= 3 and saved["global_step"] > stopped_at  # resumed, and went on to the end


def test_out_of_memory_in_training_names_the_batch_settings(tiny_cfg):
    with pytest.raises(RunStopped, match=r"out of memory at step 2: lower data.batch_tokens \(now \d+\) or "
                                         r"data.max_batch_size \(now \d+\); the newest checkpoint is .*; resume with "
                                         r"the lower setting: ") as info:
        train(stopped_run(tiny_cfg, "oom"))
    assert info.value.exit_status == 1


@pytest.mark.slow
def test_the_command_ends_in_one_line_with_the_exit_status_of_the_signal(tiny_corpus, tmp_path):
    result = run_cli("hiersum", ["train", *train_args(
        tiny_corpus, tmp_path / "run", "trainer.max_epochs=2", "callbacks.step_checkpoint.every_n_train_steps=1",
        "+callbacks.stop._target_=tests.helpers.probes.StopAt", "+callbacks.stop.step=2", "+callbacks.stop.how=ctrl-c",
    )], check=False)
    assert result.returncode == 130 and "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("hiersum train: stopped by Ctrl-C at step 2: the newest checkpoint is ")
    assert last.endswith("ckpt_path=last") and f"hydra.run.dir={tmp_path / 'run'}" in last
