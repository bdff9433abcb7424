"""Long runs of ``hiersum-train``: a run killed with SIGKILL in its first epoch (a real process) and rerun with
``ckpt_path`` ends with the weights, global step, learning rates and logged losses of the same run uninterrupted;
a run resumed twice, the first time from an epoch's last batch, ends as the run never stopped; a diverging run
stops with one line and writes no non-finite checkpoint. Runs that end by themselves (the references, the
resumes, the diverging run) run in this process, as the console script runs them (the ~6 s of imports a process
pays is most of a tiny run). DDP runs killed and resumed: Lightning's launcher test of
tests/training/test_dead_worker.py."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch

from hiersum.commands.train import train
from tests.helpers.cli import BIN, cli_env, run_in_process, train_args
from tests.helpers.config import compose_config, train_overrides
from tests.helpers.logged import train_rows

pytestmark = pytest.mark.slow

STEP_EVERY = 3
# 40 examples in batches of at most 4: ~10 batches an epoch; dropout on, so the random state matters
RUN = ["model.dropout=0.1", "data.max_batch_size=4", "trainer.max_epochs=2", "trainer.limit_val_batches=2",
       "trainer.num_sanity_val_steps=0", "eval_split=null", "trainer.log_every_n_steps=1",
       f"callbacks.step_checkpoint.every_n_train_steps={STEP_EVERY}"]


def run(corpus: Path, run_dir: Path, *extra: str) -> None:
    """The run to its end in this process: ``train(cfg)`` of ``hiersum-train`` with the same command line
    (one intra-op thread, as the processes: the autouse ``single_thread`` fixture)."""
    train(compose_config("train", train_overrides(corpus, *RUN, *extra), run_dir))


def start(corpus: Path, run_dir: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([str(BIN / "hiersum-train"), *train_args(corpus, run_dir, *RUN, *extra)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=cli_env(),
                            start_new_session=True)  # its own process group, killed as one


def kill_after(process: subprocess.Popen, checkpoint: Path) -> None:
    """SIGKILL the run's process group as soon as ``checkpoint`` appears."""
    deadline = time.monotonic() + 600
    while not checkpoint.exists():
        assert process.poll() is None, f"the run ended before {checkpoint.name}: {process.communicate()[1][-3000:]}"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def pretrained_run(directory: Path) -> list[str]:
    """A tiny random BERT as the paragraph encoder, PreSumm's two parameter groups, its lowest layer frozen."""
    from tests.helpers.pretrained import make_tiny_bert

    bert = make_tiny_bert(directory)
    return ["model=pretrained", f"model.pretrained_encoder={bert}", "model.heads=2", "model.inter_heads=2",
            "model.ff_size=64", "model.pretrained_frozen_layers=1", "optim=presumm"]


@pytest.mark.parametrize("model", ["hierarchical", "pretrained"])
def test_a_killed_run_resumes_exactly(model, tiny_corpus, tmp_path):
    options = pretrained_run(tmp_path / "bert") if model == "pretrained" else []
    killed_dir = tmp_path / "killed"
    saved = killed_dir / "checkpoints" / f"step{STEP_EVERY:08d}.ckpt"
    kill_after(start(tiny_corpus, killed_dir, *options), saved)
    saved_step = torch.load(saved, weights_only=True)["global_step"]
    loader_state = torch.load(saved, weights_only=True)["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]
    assert loader_state["epoch"] == 0 and loader_state["consumed"] == saved_step == STEP_EVERY  # inside epoch 0
    # ckpt_path=last: the newest checkpoint of the run directory (the step checkpoint, or last.ckpt
    # if the kill came after it was written too: the same state)
    run(tiny_corpus, killed_dir, *options, "ckpt_path=last")
    run(tiny_corpus, tmp_path / "reference", *options)

    uninterrupted = torch.load(tmp_path / "reference" / "checkpoints" / "last.ckpt", weights_only=True)
    resumed = torch.load(killed_dir / "checkpoints" / "last.ckpt", weights_only=True)
    assert resumed["global_step"] == uninterrupted["global_step"] > saved_step
    assert resumed["epoch"] == uninterrupted["epoch"] == 1
    for name, weight in uninterrupted["state_dict"].items():
        torch.testing.assert_close(resumed["state_dict"][name], weight, rtol=0, atol=1e-6, msg=name)
    # the same batches in the same order with the same dropout: every logged loss and lr is the reference's;
    # only the row of the checkpoint's own update may be lost (it is logged after the save)
    expected, got = train_rows(tmp_path / "reference"), train_rows(killed_dir)
    assert {step: got[step] for step in got} == {step: expected[step] for step in got}
    assert set(expected) - set(got) <= {saved_step - 1}
    assert (killed_dir / "tokenizer" / "tokenizer.json").read_text() == (
        tmp_path / "reference" / "tokenizer" / "tokenizer.json").read_text()


def test_a_run_resumed_from_an_epochs_last_batch_then_resumed_again_ends_as_the_run_never_stopped(tiny_corpus,
                                                                                                   tmp_path):
    """One process, 10 steps an epoch, a step checkpoint every 5: the first run stops after step 12, is resumed
    from its step-10 checkpoint (the last batch of epoch 0, before its validation), stops after step 16 and is
    resumed again from its step-15 checkpoint (inside epoch 1). Lightning 2.6.6 left the resumed run's epoch
    counter one behind (hiersum.training.resume.repair_epoch_progress), so the second resume trained epoch 1's
    first 5 batches again: 25 steps, not 20. Now: the step-15 checkpoint's loop state is the uninterrupted run's,
    and so are the final step and weights."""
    every = ["callbacks.step_checkpoint.every_n_train_steps=5"]
    reference, stopped = tmp_path / "reference", tmp_path / "stopped"
    run(tiny_corpus, reference, *every)
    run(tiny_corpus, stopped, *every, "trainer.max_steps=12")
    run(tiny_corpus, stopped, *every, "trainer.max_steps=16",
        f"ckpt_path={stopped / 'checkpoints' / 'step00000010.ckpt'}")
    progress = {run: torch.load(run / "checkpoints" / "step00000015.ckpt", weights_only=True)["loops"]["fit_loop"]
                for run in (reference, stopped)}
    assert progress[stopped]["epoch_progress"] == progress[reference]["epoch_progress"]
    assert progress[stopped]["epoch_loop.batch_progress"] == progress[reference]["epoch_loop.batch_progress"]
    run(tiny_corpus, stopped, *every, f"ckpt_path={stopped / 'checkpoints' / 'step00000015.ckpt'}")
    uninterrupted = torch.load(reference / "checkpoints" / "last.ckpt", weights_only=True)
    resumed = torch.load(stopped / "checkpoints" / "last.ckpt", weights_only=True)
    assert resumed["global_step"] == uninterrupted["global_step"] == 20
    for name, weight in uninterrupted["state_dict"].items():
        torch.testing.assert_close(resumed["state_dict"][name], weight, rtol=0, atol=1e-6, msg=name)


def test_a_diverging_run_stops_with_one_line_and_no_nonfinite_checkpoint(tiny_corpus, tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "diverging"
    ran = run_in_process("hiersum-train", train_args(tiny_corpus, run_dir, *RUN, "optim.scheduler.lr=1e6",
                                                     "optim.scheduler.warmup_steps=1", "optim.max_consecutive_skips=4"),
                         monkeypatch, capsys)
    stderr = ran.stderr
    assert ran.returncode == 1, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if line.startswith("hiersum-train:")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr[-3000:]
    assert "training diverged at step" in lines[0] and "4 updates in a row" in lines[0] and "train-0000" in lines[0]
    skipped = [float(row["train/skipped_steps"]) for row in csv.DictReader(open(run_dir / "csv" / "metrics.csv"))
               if row.get("train/skipped_steps")]
    assert skipped[-1] >= 3 and skipped == sorted(skipped)
    checkpoints = list((run_dir / "checkpoints").glob("*.ckpt"))
    assert checkpoints  # written while updates were skipped: with the last finite weights
    for path in checkpoints:
        weights = torch.load(path, weights_only=True)["state_dict"].values()
        assert all(torch.isfinite(w).all() for w in weights), path.name
