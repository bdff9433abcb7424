"""Training that outlives a dead worker, on 2 CPU processes over gloo, under the launchers clusters use:

- torchrun (TorchElastic): a worker SIGKILLed at a random step; torchrun restarts the group, which resumes
  from the run's newest checkpoint in the same run directory, and ends with the weights of the run never
  interrupted;
- Lightning's own launcher: rank 1 SIGKILLed at a random step, then rank 0 of the resumed job at a later one;
  each job ends in bounded time with one last line naming the lost rank and the command that resumes, no
  process of it left; the second resumed job ends with the weights, logged losses and learning rates, and
  tokenizer of the run never interrupted;
- SLURM: SIGUSR1 before the time limit; Lightning's auto-requeue saves ``hpc_ckpt_1.ckpt`` in the job's run
  directory and calls ``scontrol requeue`` (a stand-in on PATH records it, then ends the job as SLURM does);
  the requeued job resumes from it and trains to the end.

The run never interrupted is itself checked as a 2-process run: both ranks train every step, and rank 0 alone
scores the test split and says the run directory.

Every wait has a deadline: a rank that waits forever fails the test instead of hanging it. The kill step is
drawn at random (printed, so a failure can be replayed with ``HIERSUM_KILL_STEP=N``; the second kill of the
Lightning launcher's test with ``HIERSUM_SECOND_KILL_STEP=M``). The run never interrupted, which the resumed
ones are compared with, is trained once for the session: the pytest-xdist workers share it under a file lock.
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from tests.helpers.cli import BIN, cli_env, train_args
from tests.helpers.config import train_overrides
from tests.helpers.logged import train_rows
from tests.helpers.probes import probe_overrides, read_probes
from tests.helpers.shared import made_once

pytestmark = pytest.mark.slow

STEP_EVERY = 3
EPOCHS = 6
STEPS = EPOCHS * 5  # 40 examples in batches of at most 4 over 2 ranks: 5 steps an epoch
TRAINING = ["model.dropout=0.1", "data.max_batch_size=4", f"trainer.max_epochs={EPOCHS}", "trainer.limit_val_batches=2",
            "trainer.num_sanity_val_steps=0", "trainer.log_every_n_steps=1", f"checkpoint_every_n_steps={STEP_EVERY}"]
RUN = [*TRAINING, "eval_split=null"]
"""The runs that are killed and resumed: they score nothing (the one never interrupted scores 4 test examples)."""
EVALUATED = 4
DDP_TIMEOUT = 30
DDP = ["trainer=ddp", "trainer.accelerator=cpu", "trainer.devices=2", f"ddp_timeout={DDP_TIMEOUT}"]
DEADLINE = 600
"""Seconds any one job of these tests may take before the test fails."""
ENDS_WITHIN = DDP_TIMEOUT + 240
"""Seconds a job may take to end after a rank is killed: the survivors give up DDP_TIMEOUT after it, then tear
down (imports of the error path, gloo's shutdown: slow on a loaded machine). A job that hangs waits for torch's
default process-group timeout, 30 minutes, so this bound tells the two apart without depending on the load."""


def job_env(**extra: str) -> dict[str, str]:
    return {**cli_env(), **extra}


def start(command: list[str], log: Path, *, cwd: Path | None = None, env: dict[str, str] | None = None
          ) -> subprocess.Popen:
    """The job in its own process group (every process it starts is in it), its output in ``log``."""
    with open(log, "ab") as output:
        return subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, cwd=cwd, env=env or job_env(),
                                start_new_session=True)


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid``, from the process table."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # ended meanwhile
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


def wait_for_group_to_end(job: subprocess.Popen, timeout: float) -> float:
    """Seconds until no process of the job's group is left (the test fails past ``timeout``)."""
    started = time.monotonic()
    while group_members(job.pid):
        job.poll()  # reap the job's own process
        if time.monotonic() - started > timeout:
            os.killpg(job.pid, signal.SIGKILL)
            pytest.fail(f"processes of the job still running {timeout} s after the kill")
        time.sleep(0.1)
    job.wait(timeout=10)
    return time.monotonic() - started


def finish(job: subprocess.Popen, log: Path) -> None:
    try:
        job.wait(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        pytest.fail(f"the job did not end within {DEADLINE} s:\n{log.read_text()[-5000:]}")
    assert job.returncode == 0, log.read_text()[-5000:]


def kill_step(low: int = STEP_EVERY, high: int = STEPS - 2, variable: str = "HIERSUM_KILL_STEP") -> int:
    """The step after which a worker is killed: drawn between ``low`` (by default the first checkpoint) and
    ``high`` (by default 2 steps before the end)."""
    step = int(os.environ.get(variable) or random.randint(low, high))
    print(f"kill after step {step} ({variable}={step} replays it)")
    return step


def newest_step(checkpoints: Path) -> int:
    steps = [int(m.group(1)) for path in checkpoints.glob("step*.ckpt") if (m := re.match(r"step(\d+)", path.stem))]
    return max(steps, default=-1)


def wait_for_step(job: subprocess.Popen, run_dirs: Callable[[], list[Path]], step: int, log: Path) -> Path:
    """Wait until a step checkpoint at or past ``step`` is written; the run directory it is in."""
    deadline = time.monotonic() + DEADLINE
    while True:
        for run_dir in run_dirs():
            if newest_step(run_dir / "checkpoints") >= step:
                return run_dir
        assert job.poll() is None, f"the job ended before step {step}:\n{log.read_text()[-5000:]}"
        assert time.monotonic() < deadline, f"no checkpoint of step {step} after {DEADLINE} s"
        time.sleep(0.02)


def ranks(parent: int) -> dict[int, int]:
    """rank -> pid of the training processes among ``parent``'s children (their ``RANK`` or ``LOCAL_RANK``)."""
    found = {}
    for pid in Path(f"/proc/{parent}/task/{parent}/children").read_text().split():
        variables = Path(f"/proc/{pid}/environ").read_text().split("\0")
        environ = dict(item.split("=", 1) for item in variables if "=" in item)
        rank = environ.get("RANK", environ.get("LOCAL_RANK"))
        if rank is not None:
            found[int(rank)] = int(pid)
    return found


def saved_step(checkpoint: Path) -> int:
    return torch.load(checkpoint, weights_only=True)["global_step"]


def final_weights(run_dir: Path) -> dict[str, torch.Tensor]:
    checkpoint = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True)
    assert checkpoint["global_step"] == STEPS
    return checkpoint["state_dict"]


def assert_same_weights(got: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> None:
    # the resumed run replays the batches, dropout draws and gradient all-reduces of the uninterrupted one
    # (the loader's position and every rank's random state are in the checkpoint): the same numbers, bit for
    # bit (a sum over 2 ranks does not depend on their order; on CPU the kernels are deterministic)
    assert got.keys() == expected.keys()
    for name, weight in expected.items():
        torch.testing.assert_close(got[name], weight, rtol=0, atol=0, msg=name)


@pytest.fixture(scope="module")
def uninterrupted(tiny_corpus, tmp_path_factory, worker_id) -> Path:
    """The run directory of the 2-process run never interrupted (Lightning's launcher, same seed): made once for
    the session (:func:`tests.helpers.shared.made_once`)."""

    def make(folder: Path) -> None:
        log = folder / "uninterrupted.log"
        scored = ["eval_split=test", f"data.limit_eval_examples={EVALUATED}", *probe_overrides(folder / "probes")]
        finish(start([str(BIN / "hiersum-train"), *train_args(tiny_corpus, folder / "run", *TRAINING, *scored, *DDP)],
                     log), log)

    return made_once(tmp_path_factory, worker_id, "dead-worker-uninterrupted", make) / "run"


def test_two_ranks_train_every_step_then_rank_zero_alone_scores_the_test_split(uninterrupted):
    """The run never interrupted, as any 2-process run: the ranks Lightning starts run the command again (here
    ``hiersum-train``; as ``hiersum train``: the Lightning launcher's test below, whose resumed jobs say their run
    directory once too); both train every step, neither with the evaluation imported; rank 0 scores the test
    split after the other rank has returned (no metric sync) and alone says the run directory."""
    ranks = read_probes(uninterrupted.parent / "probes")
    assert sorted(ranks) == [0, 1], ranks
    assert all((r["world_size"], r["global_step"]) == (2, STEPS) for r in ranks.values()), ranks
    # the ranks trained without the evaluation's imports (rouge-score, nltk): only rank 0 loads them, to score
    assert all(r["scoring_libraries"] == [] for r in ranks.values()), ranks
    output = (uninterrupted.parent / "uninterrupted.log").read_text()
    assert output.count("run directory:") == 1 and f"run directory: {uninterrupted}" in output, output[-5000:]
    assert (uninterrupted / ".hydra" / "config.yaml").is_file() and train_rows(uninterrupted)  # losses logged
    metrics = json.loads((uninterrupted / "metrics.json").read_text())
    assert metrics["n_examples"] == EVALUATED and metrics["test"]["model"]["perplexity"] > 1.0


def test_torchrun_restarts_a_killed_worker_from_the_runs_last_checkpoint(tiny_corpus, tmp_path, uninterrupted):
    log, train_dir = tmp_path / "torchrun.log", tmp_path / "outputs" / "train"
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", "--max-restarts=2",
               "-m", "hiersum", "train", *train_overrides(tiny_corpus, *RUN, *DDP)]
    # no hydra.run.dir: the run directory comes from torchrun's run id; the store not shared, as
    # hiersum.training.launchers.torchrun_restart_hazard advises (without it the restarted group fails to
    # connect now and then: pytorch/pytorch#135712)
    job = start(command, log, cwd=tmp_path, env=job_env(TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1"))
    step = kill_step()
    run_dir = wait_for_step(job, lambda: list(train_dir.glob("*")), step, log)
    victim = random.choice(sorted(ranks(job.pid).items()))
    os.kill(victim[1], signal.SIGKILL)
    print(f"killed rank {victim[0]} at step {newest_step(run_dir / 'checkpoints')}")
    finish(job, log)

    assert [path.name for path in train_dir.iterdir()] == [run_dir.name]  # one folder for the ranks and restarts
    assert run_dir.name.startswith("torchrun-")
    output = log.read_text()
    resumed = re.findall(r"resuming from (\S+) \(epoch \d+, global step (\d+)\), torchrun job \S+, restart 1", output)
    assert resumed, output[-5000:]
    assert {Path(path).parent for path, _ in resumed} == {run_dir / "checkpoints"}
    assert int(resumed[0][1]) >= STEP_EVERY
    assert_same_weights(final_weights(run_dir), final_weights(uninterrupted))
    assert not group_members(job.pid)


def kill_a_rank_and_read_the_last_line(job: subprocess.Popen, run_dir: Path, log: Path, step: int, victim: int,
                                       program: str) -> tuple[list[str], Path]:
    """SIGKILL rank ``victim`` of ``job`` (started as ``program``) once a checkpoint of ``step`` is written; the
    job ends in bounded time, its last line names the lost rank and the newest checkpoint: the command it gives
    to resume, as a user would paste it, and that checkpoint."""
    wait_for_step(job, lambda: [run_dir], step, log)
    victims = {0: job.pid, **ranks(job.pid)}
    os.kill(victims[victim], signal.SIGKILL)
    wait_for_group_to_end(job, timeout=ENDS_WITHIN)
    assert job.returncode == (-signal.SIGKILL if victim == 0 else 1)  # rank 0 is the process started
    last = log.read_text().strip().splitlines()[-1]
    assert last.startswith(f"{program}: ") and "Traceback" not in last, log.read_text()[-5000:]
    assert f"rank {victim} (pid {victims[victim]})" in last, last
    resume = last.split("resume: ", 1)[1]
    named = Path(re.search(r"ckpt_path=(\S+)", resume).group(1))  # last.ckpt, unless the kill fell between
    assert named.parent == run_dir / "checkpoints"                  # a step checkpoint and its last.ckpt
    assert saved_step(named) == max(map(saved_step, named.parent.glob("*.ckpt")))
    command = shlex.split(resume)
    assert command[:2] == ["hiersum", "train"]
    return command, named


def test_lightnings_launcher_ends_in_bounded_time_naming_the_lost_rank_and_resumes(tiny_corpus, tmp_path,
                                                                                 uninterrupted):
    """Rank 1 killed, the job resumed with the command its last line gives; rank 0 of that job killed at a
    later step, resumed again: each job ends as it should, and the last one with the weights, logged losses and
    learning rates, and tokenizer of the run never interrupted."""
    run_dir, log = tmp_path / "run", tmp_path / "job.log"
    job = start([str(BIN / "hiersum-train"), *train_args(tiny_corpus, run_dir, *RUN, *DDP)], log)
    (program, *args), first = kill_a_rank_and_read_the_last_line(job, run_dir, log, kill_step(high=STEPS // 2),
                                                                 victim=1, program="hiersum-train")
    # the checkpoint resumed from (last.ckpt, written again later: read now) holds the loader's place in its
    # epoch (each rank's batches: 5 an epoch)
    first_step = saved_step(first)
    loader = torch.load(first, weights_only=True)["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]
    assert loader["epoch"] * STEPS // EPOCHS + loader["consumed"] == first_step, loader
    resumed_log = tmp_path / "resumed.log"
    resumed = start([str(BIN / program), *args], resumed_log)  # the same run directory, its checkpoints
    second = kill_step(newest_step(run_dir / "checkpoints") + STEP_EVERY, STEPS - 2, "HIERSUM_SECOND_KILL_STEP")
    (program, *args), last = kill_a_rank_and_read_the_last_line(resumed, run_dir, resumed_log, second, victim=0,
                                                                program="hiersum train")
    last_step = saved_step(last)
    resume_log = tmp_path / "resume.log"
    finish(start([str(BIN / program), *args], resume_log), resume_log)
    # the same weights as the run never interrupted: no batch trained twice after the second resume (a first
    # resume from an epoch's last batch once left Lightning's epoch counter behind), both ranks ran again as
    # `hiersum train`, and rank 1 does not say the run directory again
    assert_same_weights(final_weights(run_dir), final_weights(uninterrupted))
    # the same batches in the same order with the same dropout: every logged loss and lr is the uninterrupted
    # run's; only the row of a resumed checkpoint's own update may be lost (it is logged after the save)
    expected, got = train_rows(uninterrupted), train_rows(run_dir)
    assert {step: got[step] for step in got} == {step: expected[step] for step in got}
    assert set(expected) - set(got) <= {first_step - 1, last_step - 1}
    assert (run_dir / "tokenizer" / "tokenizer.json").read_text() == (
        uninterrupted / "tokenizer" / "tokenizer.json").read_text()
    resumed_text = resume_log.read_text()
    assert resumed_text.count("run directory:") == 1 and f"run directory: {run_dir}" in resumed_text, \
        resumed_text[-5000:]


STAND_IN_SCONTROL = """#!/bin/sh
# a stand-in for SLURM's scontrol: records its arguments, then ends the job it requeued, as SLURM does
echo "$@" >> "{record}"
kill -KILL $PPID
"""


def test_a_slurm_job_signalled_before_its_limit_requeues_and_resumes_from_its_checkpoint(tiny_corpus, tmp_path):
    bin_dir, record = tmp_path / "bin", tmp_path / "scontrol.calls"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(STAND_IN_SCONTROL.format(record=record))
    (bin_dir / "scontrol").chmod(0o755)
    slurm = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": "hiersum", "SLURM_NTASKS": "1", "SLURM_NTASKS_PER_NODE": "1",
             "SLURM_NNODES": "1", "SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_NODEID": "0",
             "SLURM_NODELIST": "localhost", "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    command = [str(BIN / "hiersum-train"), *train_overrides(tiny_corpus, *RUN)]  # one process, as one SLURM task
    log, run_dir = tmp_path / "job.log", tmp_path / "outputs" / "train" / "slurm-4242"
    job = start(command, log, cwd=tmp_path, env=job_env(**slurm))
    wait_for_step(job, lambda: [run_dir], random.randint(STEP_EVERY, 2 * STEPS - 2), log)
    job.send_signal(signal.SIGUSR1)  # sbatch --signal=USR1@90: the time limit is near
    job.wait(timeout=120)  # the stand-in scontrol ends the job once it is requeued
    assert job.returncode == -signal.SIGKILL, log.read_text()[-5000:]
    assert record.read_text().split() == ["requeue", "4242"]
    saved = run_dir / "hpc_ckpt_1.ckpt"
    assert max(map(saved_step, run_dir.glob("checkpoints/*.ckpt"))) <= saved_step(saved)

    requeued = start(command, log, cwd=tmp_path, env=job_env(**slurm, SLURM_RESTART_COUNT="1"))
    finish(requeued, log)
    assert [path.name for path in run_dir.parent.iterdir()] == [run_dir.name]
    assert re.search(rf"resuming from {saved} \(epoch \d+, global step {saved_step(saved)}\), SLURM job 4242, "
                     "restart 1", log.read_text()), log.read_text()[-5000:]
    # one process: every batch is a step. Lightning saves hpc_ckpt_1 inside its signal handler, in the middle of
    # a step, so the batch in flight may be skipped (its step with it: CI saw 59 of 60 once): the weights are
    # not compared with an uninterrupted run's, and the run ends after all its batches but that one at most
    assert saved_step(run_dir / "checkpoints" / "last.ckpt") in (2 * STEPS - 1, 2 * STEPS)
