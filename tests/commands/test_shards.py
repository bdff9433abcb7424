"""Summarizing in shards: ``devices=2`` on the CPU writes every id once, in input order, with the summaries
one process writes; ``shard=I/N`` jobs write their shards, which ``devices=N`` then merges without decoding;
malformed records are reported by their shard and merged in line order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hiersum.commands.shards import Shard
from hiersum.commands.summarize import summarize
from hiersum.errors import UsageError
from tests.helpers.paths import SAMPLE_DIR

pytestmark = pytest.mark.slow


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture()
def source(tmp_path) -> Path:
    lines = (SAMPLE_DIR / "test.jsonl").read_text(encoding="utf-8").splitlines()[:7]
    lines.insert(4, "{not json")  # position 4: shard 0 of 2 reports it
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture()
def run(tiny_cfg, checkpoint, source, tmp_path):
    def summarize_with(output: Path, *overrides: str, model: Path = checkpoint):
        cfg = tiny_cfg(f"checkpoint={model}", f"input={source}", f"output={output}", "decode.beam_size=2",
                       "decode.max_length=8", *overrides, name="summarize", output_dir=tmp_path / "hydra")
        return summarize(cfg)

    return summarize_with


def test_two_cpu_processes_write_what_one_process_writes(run, tmp_path):
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    run(one)
    result = run(two, "devices=2", "device=cpu")  # two CPU processes, whatever the test device
    single, merged = read_lines(one), read_lines(two)
    assert result.written == 7 and [r["id"] for r in merged] == [r["id"] for r in single]
    for a, b in zip(single, merged, strict=True):
        assert (a["summary"], a["n_paragraphs_kept"]) == (b["summary"], b["n_paragraphs_kept"])
        assert abs(a["score"] - b["score"]) < 1e-4
    assert [e["line"] for e in read_lines(tmp_path / "two.errors.jsonl")] == [5]
    assert "shard" not in json.loads((tmp_path / "two.provenance.json").read_text())["options"]
    assert sorted(p.name for p in tmp_path.glob("two.shard-*-of-2.jsonl")) == ["two.shard-0-of-2.jsonl",
                                                                               "two.shard-1-of-2.jsonl"]


def test_array_jobs_then_devices_merges_without_decoding(run, tmp_path):
    output = tmp_path / "out.jsonl"
    first = run(output, "shard=0/2")
    second = run(output, "shard=1/2")
    assert (first.written, first.errors, second.written, second.errors) == (3, 1, 4, 0)
    sample_ids = [json.loads(line)["id"] for line in (SAMPLE_DIR / "test.jsonl").open()][:7]
    # input positions 0..7 hold records 0-3, the malformed line, records 4-6: shard 1 keeps positions 1, 3, 5, 7
    assert [r["id"] for r in read_lines(Shard(1, 2).output(output))] == [sample_ids[i] for i in (1, 3, 4, 6)]
    # every shard complete: no process starts (the checkpoint is gone), the shards are merged
    result = run(output, "devices=2", "device=cpu", model=tmp_path / "gone.ckpt")
    ids = [r["id"] for r in read_lines(output)]
    assert result.written == 7 and ids == sample_ids


@pytest.mark.parametrize("text", ["2/2", "-1/3", "1", "a/b", "0/0"])
def test_a_bad_shard_is_a_usage_error(text):
    with pytest.raises(UsageError, match="shard must be I/N with 0 <= I < N"):
        Shard.parse(text)
