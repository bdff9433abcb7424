"""Two "nodes" on localhost: two ``hiersum train`` processes started as the nodes of a cluster would be, each with
``trainer.num_nodes=2 trainer.devices=1`` and the environment Lightning's ``LightningEnvironment`` reads
(``MASTER_ADDR``, ``MASTER_PORT``, ``NODE_RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``: the process was started
from outside, Lightning starts no other), gloo on the CPU. They train on disjoint examples (hiersum's
token-budget sampler shards by global rank) and end with the same weights (DDP averages the gradients).
The tiny corpus's 40 training examples make 4 batches of 10 (``data.max_batch_size=10``): an even count, so the
sampler repeats no batch to give the ranks as many (it does for an odd count)."""

from __future__ import annotations

import json
import socket
import subprocess

import pytest
import torch

from tests.helpers.cli import BIN, cli_env, train_args
from tests.helpers.corpus import TINY_SIZES
from tests.helpers.paths import PROJECT_ROOT
from tests.helpers.probes import data_probe_overrides

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_two_nodes_train_on_disjoint_data_and_end_with_the_same_weights(tiny_corpus, tmp_path):
    probes, port = tmp_path / "probes", free_port()
    processes = []
    for node in range(2):
        args = train_args(
            tiny_corpus, tmp_path / f"node{node}", "trainer=ddp", "trainer.accelerator=cpu", "trainer.devices=1",
            "trainer.num_nodes=2", "trainer.max_epochs=1", "data.max_batch_size=10", "trainer.limit_val_batches=0",
            "trainer.num_sanity_val_steps=0", "eval_split=null", "callbacks=none", *data_probe_overrides(probes),
        )
        env = {**cli_env(), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "NODE_RANK": str(node),
               "WORLD_SIZE": "2", "LOCAL_RANK": "0"}
        processes.append(subprocess.Popen([str(BIN / "hiersum"), "train", *args], cwd=PROJECT_ROOT, env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = []
    for process in processes:
        try:
            outputs.append(process.communicate(timeout=240)[0])
        finally:
            process.kill()
    assert [p.returncode for p in processes] == [0, 0], "\n".join(output[-3000:] for output in outputs)

    records = {rank: json.loads((probes / f"data{rank}.json").read_text()) for rank in range(2)}
    assert all((r["world_size"], r["num_nodes"]) == (2, 2) for r in records.values()), records
    steps = records[0]["global_step"]
    assert steps >= 1 and records[1]["global_step"] == steps
    seen = [{example for batch in records[rank]["batches"] for example in batch} for rank in range(2)]
    assert seen[0] and seen[1] and not seen[0] & seen[1], seen  # each rank its own examples
    assert len(seen[0] | seen[1]) == TINY_SIZES["train"]  # and together the whole epoch

    weights = [torch.load(probes / f"weights{rank}.pt", weights_only=True) for rank in range(2)]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][key], weights[1][key]) for key in weights[0]), "the ranks' weights differ"
