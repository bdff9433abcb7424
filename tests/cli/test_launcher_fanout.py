"""Fan-out through Hydra's launchers (docs/summarizing.md, "Many machines"): ``hiersum summarize -m
shard=0/2,1/2 hydra/launcher=submitit_local`` runs the shards as submitit jobs (on a cluster,
``hydra/launcher=slurm``); a shard job killed by SIGKILL and launched again resumes its shard, every record
once; ``devices=2`` then merges the shards into an output byte-identical to one process's. The same for
``hiersum rank``; ``hydra/launcher=slurm`` composes for a shard job (one node, task and GPU). Every process has
a timeout. The shard jobs, the killed one and the sweeps are real processes; the run of the whole input in one
process and the merge (no process of their own to test: ``tests/commands/test_shards.py`` and
``test_one_writer.py`` test the merge) run in this one, single-threaded as the processes are
(``OMP_NUM_THREADS=1``), so that their bytes compare."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from hiersum.cli.common import CONFIG_DIR
from hiersum.commands.rank import rank
from hiersum.commands.shards import Shard
from hiersum.commands.summarize import summarize
from tests.helpers.checkpoints import save_summarizer_checkpoint
from tests.helpers.cli import BIN, cli_env
from tests.helpers.config import compose_config, device_overrides
from tests.helpers.corpus import write_sample_records
from tests.helpers.locks import TIMEOUT

N_RECORDS = 12
RUN_TIMEOUT = 600


def read_ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines()]


def job_env() -> dict[str, str]:
    """The processes' environment: one thread, as this process decodes (``single_thread`` of conftest.py)."""
    return {**cli_env(), "OMP_NUM_THREADS": "1"}


def hiersum(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    result = subprocess.run([str(BIN / "hiersum"), *args], cwd=cwd, env=job_env(), capture_output=True, text=True,
                            timeout=RUN_TIMEOUT)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.fixture()
def source(tmp_path) -> Path:
    return write_sample_records(tmp_path / "in.jsonl", N_RECORDS)


def job_logs(sweep: Path) -> str:
    """What the submitit jobs of a sweep wrote on stderr."""
    return "".join(path.read_text(encoding="utf-8") for path in sorted(sweep.glob(".submitit/*/*_log.err")))


@pytest.mark.slow  # submitit jobs, a killed shard job: several processes
def test_summarize_shards_through_submitit_local_merge_to_one_process_output(source, tmp_path, capsys, device):
    checkpoint = save_summarizer_checkpoint(tmp_path / "tiny.ckpt")
    options = [f"checkpoint={checkpoint}", f"input={source}", "decode.batch_size=1", "decode.beam_size=2",
               "decode.min_length=60", "decode.max_length=60",  # one record a batch: the same batches anywhere
               *device_overrides("summarize", device)]  # every run on the tests' device
    decode_given = {"batch_size", "beam_size", "min_length", "max_length"}  # given on the command line
    one, output = tmp_path / "one.jsonl", tmp_path / "out.jsonl"
    summarize(compose_config("summarize", [*options, f"output={one}"], tmp_path / "one"), decode_given)

    shard = Shard(1, 2).output(output)  # a shard job killed while it writes (SIGKILL: a preempted cluster job)
    job = subprocess.Popen([str(BIN / "hiersum"), "summarize", *options, f"output={output}", "shard=1/2",
                            f"hydra.run.dir={tmp_path / 'killed'}"], cwd=tmp_path, env=job_env(),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + RUN_TIMEOUT
    while not (shard.exists() and shard.read_bytes().count(b"\n") >= 1):
        assert job.poll() is None and time.monotonic() < deadline, "the shard job ended before writing"
        time.sleep(0.01)
    job.send_signal(signal.SIGKILL)
    job.wait(timeout=TIMEOUT)
    written = len(read_ids(shard))
    assert 1 <= written < N_RECORDS // 2

    sweep = tmp_path / "sweep"
    hiersum("summarize", "-m", "shard=0/2,1/2", "hydra/launcher=submitit_local", *options, f"output={output}",
            f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert f"to {shard} ({written} already there)" in job_logs(sweep)  # the relaunched job resumed its shard
    assert Counter(read_ids(shard)) == Counter(read_ids(source)[1::2]) and not output.exists()

    capsys.readouterr()
    summarize(compose_config("summarize", [*options, f"output={output}", "devices=2"], tmp_path / "merge"),
              decode_given)
    assert f"merged the 2 shards ({N_RECORDS} summaries)" in capsys.readouterr().err
    assert output.read_bytes() == one.read_bytes()


@pytest.mark.slow  # submitit jobs: several processes
def test_rank_shards_through_submitit_local_merge_to_one_process_output(source, tmp_path, capsys):
    options = ["ranker=tfidf", f"input={source}", "top_k=3"]
    one, output, sweep = tmp_path / "one.jsonl", tmp_path / "out.jsonl", tmp_path / "sweep"
    rank(compose_config("rank", [*options, f"output={one}"], tmp_path / "one"))
    hiersum("rank", "-m", "shard=0/2,1/2", "hydra/launcher=submitit_local", *options, f"output={output}",
            f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert Counter(read_ids(Shard(0, 2).output(output))) == Counter(read_ids(source)[0::2])
    capsys.readouterr()
    rank(compose_config("rank", [*options, f"output={output}", "devices=2"], tmp_path / "merge"))
    assert f"merged the 2 shards ({N_RECORDS} ranked records)" in capsys.readouterr().err
    assert output.read_bytes() == one.read_bytes()
    assert "shard" not in json.loads(output.with_name("out.provenance.json").read_text())["options"]


@pytest.mark.parametrize(("action", "overrides", "sizes"), [
    ("summarize", ["checkpoint=c", "input=i", "output=o", "shard=0/2"], (1, 1, 1)),
    ("rank", ["ranker=tfidf", "input=i", "output=o", "shard=0/2"], (1, 1, 1)),
    ("train", ["trainer=ddp", "trainer.num_nodes=2", "trainer.devices=4"], (2, 4, 4)),
])
def test_the_slurm_launcher_composes_for_shard_jobs_and_for_training(action, overrides, sizes):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(action, overrides=["hydra/launcher=slurm", *overrides], return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher")
    assert (launcher.nodes, launcher.tasks_per_node, launcher.gpus_per_node) == sizes
