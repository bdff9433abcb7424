"""One writer per output (:mod:`hiersum.data.output_lock`) in the commands: two ``hiersum summarize`` processes
on one output (the second refused at once in one line naming the first, exit 2); the first SIGKILLed while it
holds the lock (the rerun is not blocked; the output holds every id exactly once); the shards of one output each
with its lock, the merge (``devices=N``) holding the output's; ``rank``, ``export`` and ``evaluate`` refused while
another process holds their output. Every wait on a process has a timeout."""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from hiersum.commands.evaluate import evaluate
from hiersum.commands.export import export
from hiersum.commands.rank import rank
from hiersum.commands.shards import Shard
from hiersum.commands.summarize import summarize
from hiersum.config import ExportConfig
from hiersum.data.output_lock import OutputLocked, lock_path
from tests.helpers.checkpoints import save_summarizer_checkpoint
from tests.helpers.cli import BIN, assert_usage_error, cli_env
from tests.helpers.config import compose_config
from tests.helpers.corpus import write_sample_records
from tests.helpers.locks import TIMEOUT, kill, lock_holder
from tests.helpers.paths import PROJECT_ROOT, SAMPLE_DIR

N_RECORDS = 6


def read_ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture()
def source(tmp_path) -> Path:
    return write_sample_records(tmp_path / "in.jsonl", N_RECORDS)


def start_summarize(checkpoint: Path, output: Path, tmp_path: Path) -> subprocess.Popen:
    """``hiersum summarize input=- output=OUTPUT``, holding the output's lock once it exists: it waits for its
    standard input (a pipe the test writes and closes), so it is alive as long as the test wants."""
    process = subprocess.Popen([str(BIN / "hiersum"), "summarize", *summarize_args(checkpoint, output, tmp_path)],
                               cwd=PROJECT_ROOT, env=cli_env(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    deadline = time.monotonic() + TIMEOUT
    while not lock_path(output).exists():
        assert process.poll() is None and time.monotonic() < deadline, "the lock was never taken"
        time.sleep(0.02)
    return process


def summarize_args(checkpoint: Path, output: Path, tmp_path: Path) -> list[str]:
    return [f"checkpoint={checkpoint}", "input=-", f"output={output}", "decode=greedy", "decode.max_length=6",
            f"hydra.run.dir={tmp_path / 'hydra'}"]


@pytest.mark.slow  # two summarize processes
def test_a_second_summarize_is_refused_at_once_and_one_killed_holding_the_lock_blocks_nothing(run, checkpoint,
                                                                                                 source, tmp_path):
    """Two real processes on one output: the second refused in one line while the first holds the lock; the first
    then SIGKILLed while it holds it (a preempted job): the lock file stays, the kernel's lock goes with the
    process, and the rerun is not blocked and writes every id once."""
    output = tmp_path / "out.jsonl"
    first = start_summarize(checkpoint, output, tmp_path)
    try:
        second = subprocess.run([str(BIN / "hiersum"), "summarize", *summarize_args(checkpoint, output, tmp_path)],
                                cwd=PROJECT_ROOT, env=cli_env(), input=source.read_bytes(), capture_output=True,
                                timeout=TIMEOUT)
        assert first.poll() is None  # refused while the first runs
        assert_usage_error(second.returncode, second.stderr.decode(), f"output {output} is being written by another "
                           f"process (pid {first.pid} on ", "hiersum summarize", "nothing was written")
    finally:
        kill(first)
        first.stdin.close()
        first.stderr.close()
    assert lock_path(output).exists()  # left behind: the kernel released its lock with the process
    assert run(output).written == N_RECORDS  # the rerun (in this process), not blocked
    assert Counter(read_ids(output)) == Counter(read_ids(source)) and not lock_path(output).exists()


@pytest.fixture()
def run(tiny_cfg, checkpoint, source, tmp_path):
    def summarize_with(output: Path, *overrides: str):
        cfg = tiny_cfg(f"checkpoint={checkpoint}", f"input={source}", f"output={output}", "decode=greedy",
                       "decode.max_length=6", *overrides, name="summarize", output_dir=tmp_path / "hydra")
        return summarize(cfg)

    return summarize_with


def test_each_shard_has_its_lock_and_the_merge_takes_the_outputs(run, source, tmp_path):
    output = tmp_path / "out.jsonl"
    shard_job = lock_holder(Shard(1, 2).output(output))  # a shard=1/2 job writing its shard
    try:
        assert run(output, "shard=0/2").written == 3  # another shard of the same output: its own lock
        with pytest.raises(OutputLocked, match=rf"shard 1/2 file .*out\.shard-1-of-2\.jsonl is being written by "
                                               rf"another process \(pid {shard_job.pid} "):
            run(output, "devices=2", "device=cpu")
        with pytest.raises(OutputLocked, match=f"pid {shard_job.pid}"):
            run(output, "shard=1/2")
    finally:
        kill(shard_job)
    assert not output.exists() and not Shard(1, 2).output(output).exists()  # nothing written, no shard started
    merge = lock_holder(output)  # a merge (devices=2) of this output running
    try:
        with pytest.raises(OutputLocked, match=rf"output .*out\.jsonl is being written by .*pid {merge.pid} "):
            run(output, "devices=2", "device=cpu")
    finally:
        kill(merge)  # SIGKILL: the next merge is not blocked
    assert not output.exists()
    assert run(output, "devices=2", "device=cpu").written == N_RECORDS
    assert Counter(read_ids(output)) == Counter(read_ids(source))
    assert not list(tmp_path.glob(".*.lock"))


def test_rank_export_and_evaluate_are_refused_while_their_output_is_held(source, tmp_path):
    ranked, model, run_dir = tmp_path / "ranked.jsonl", tmp_path / "model", tmp_path / "evaluation"
    checkpoint = save_summarizer_checkpoint(tmp_path / "model.ckpt")
    holders = [lock_holder(path) for path in (ranked, model, run_dir)]
    try:
        with pytest.raises(OutputLocked, match=f"output {ranked} is being written by .*pid {holders[0].pid} "):
            rank(compose_config("rank", ["ranker=tfidf", f"input={source}", f"output={ranked}"], tmp_path / "h"))
        with pytest.raises(OutputLocked, match=f"output directory {model} is being written by .*{holders[1].pid} "):
            export(ExportConfig(task_name="export", checkpoint=str(checkpoint), output=str(model), paths={}))
        evaluation = compose_config("evaluate", [f"data.path={SAMPLE_DIR}", f"predictions={source}"], run_dir)
        with pytest.raises(OutputLocked, match=f"run directory {run_dir} is being written by .*{holders[2].pid} "):
            evaluate(evaluation)
    finally:
        for holder in holders:
            kill(holder)
    assert not ranked.exists() and not model.exists() and not (run_dir / "metrics.json").exists()
    assert rank(compose_config("rank", ["ranker=tfidf", f"input={source}", f"output={ranked}"],
                               tmp_path / "h")).written == N_RECORDS
    assert Counter(read_ids(ranked)) == Counter(read_ids(source))
