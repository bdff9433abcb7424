"""Summarizing (and ranking) on several devices, or as several jobs: the input split by record into N shards.

``shard=I/N`` summarizes (``hiersum rank``: ranks) the records at positions I, I + N, I + 2N, ... of the input
(valid or not: a malformed record is reported by the shard it falls in) into
``<output stem>.shard-I-of-N.jsonl``, with its own errors and provenance files and its own exactly-once
resume: the array jobs of a cluster each run one shard (fairseq-generate's ``--num-shards/--shard-id``); Hydra
launches them as a multirun (``-m shard=0/N,... hydra/launcher=slurm``, or ``submitit_local`` on one machine).

``devices=N`` runs the N shards in N processes on this machine (``cuda:0`` ... ``cuda:N-1``, or N CPU
processes sharing the cores) and then merges them into the one output, in input order (:func:`merge`):
an output line is exactly what one process writes for that record. Shards already complete are not run
again, so after array jobs, ``devices=N`` with the same options merges their shards without decoding. The
shard files stay beside the output (they are what a rerun resumes from); delete them when done.

One writer per file (:mod:`hiersum.data.output_lock`): each shard process holds its shard's lock, and
``devices=N`` holds the output's from start to merge, refuses at once a shard another process is writing and
keeps the complete shards locked until they are merged.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from hiersum.atomic import write_bytes_atomically
from hiersum.config import RankConfig, SummarizeConfig
from hiersum.data.formats import STDIN, read_records
from hiersum.data.jsonl_output import completed_ids
from hiersum.data.output_lock import output_lock
from hiersum.data.schema import RecordError
from hiersum.errors import RunStopped, UsageError
from hiersum.inference.resumable_output import errors_path, provenance_path, write_errors

ShardedConfig = SummarizeConfig | RankConfig
"""The config of an action that writes shards: ``input``, ``input_format``, ``output``, ``shard``, ``devices``,
``device``, ``resume``, ``overwrite``."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count``: the records at positions ``index``, ``index + count``, ..."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"I/N"`` -> ``Shard(I, N)``; anything else is a :class:`UsageError`."""
        try:
            index, count = (int(part) for part in text.split("/"))
        except ValueError:
            index, count = -1, 0
        if not 0 <= index < count:
            raise UsageError(f"shard must be I/N with 0 <= I < N (e.g. shard=0/4), found {text!r}")
        return cls(index, count)

    def keeps(self, position: int) -> bool:
        """Whether the record at ``position`` (0-based, in the input) belongs to this shard."""
        return position % self.count == self.index

    def output(self, output: str | Path) -> Path:
        """``out.jsonl`` -> ``out.shard-I-of-N.jsonl``."""
        output = Path(output)
        return output.with_name(f"{output.stem}.shard-{self.index}-of-{self.count}{output.suffix}")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_devices(device: str, count: int) -> list[str]:
    """The device of each of ``count`` shard processes: ``cuda:0`` ... for CUDA, ``cpu`` for the CPU."""
    if device.startswith("cuda"):
        if torch.cuda.device_count() < count:
            raise UsageError(f"devices={count} asked for, but {torch.cuda.device_count()} CUDA devices are visible")
        return [f"cuda:{index}" for index in range(count)]
    return ["cpu"] * count


def shard_target(cfg: ShardedConfig) -> tuple[Shard | None, str]:
    """The shard of ``cfg.shard`` (None: the whole input) and the file this process writes: ``cfg.output``, or
    the shard's file beside it."""
    if cfg.shard is None:
        return None, cfg.output
    shard = Shard.parse(cfg.shard)
    if cfg.output == STDIN:
        raise UsageError("shard=I/N writes <output stem>.shard-I-of-N.jsonl: give output=FILE, not -")
    return shard, str(shard.output(cfg.output))


def run_on_devices(cfg: ShardedConfig, action: Callable[[Any], Any], command: str) -> int:
    """``devices=N`` of ``hiersum <command>``: holding the output's lock, run the shards not yet complete in as
    many processes, each ``action`` of its shard (holding its shard's lock), then :func:`merge` them into
    ``cfg.output``; returns the number of records merged. A shard another process is writing is refused before
    any starts, and the complete shards stay locked until merged."""
    if cfg.output == STDIN or cfg.shard is not None:
        raise UsageError("devices=N writes one output file from N shards: give output=FILE and no shard=")
    with output_lock(cfg.output):
        return _run_shards_and_merge(cfg, action, command)


def _run_shards_and_merge(cfg: ShardedConfig, action: Callable[[Any], Any], command: str) -> int:
    shards = [Shard(index, cfg.devices) for index in range(cfg.devices)]
    order = _input_order(cfg.input, cfg.input_format, cfg.input_layout())
    devices = shard_devices(cfg.device, cfg.devices)
    threads = max(1, (os.cpu_count() or 1) // cfg.devices)
    context = multiprocessing.get_context("spawn")
    workers = []
    with contextlib.ExitStack() as held:  # the locks of the complete shards, held until they are merged
        for shard, device in zip(shards, devices, strict=True):
            with output_lock(shard.output(cfg.output), what=f"shard {shard} file"):
                pass  # a shard another process is writing (a shard=I/N job): refused now, not by its process
            if cfg.resume and not cfg.overwrite and _complete(shard, cfg.output, order):
                held.enter_context(output_lock(shard.output(cfg.output), what=f"shard {shard} file"))
                continue
            shard_cfg = replace(cfg, devices=1, shard=str(shard), device=device)
            process = context.Process(target=_run_shard, args=(action, shard_cfg, threads, command))
            workers.append((shard, process))
        for _, worker in workers:
            worker.start()
        failed = []
        for shard, worker in workers:
            worker.join()
            if worker.exitcode != 0:
                failed.append(f"shard {shard} (exit status {worker.exitcode})")
        if failed:
            raise RunStopped(f"{', '.join(failed)} did not finish; the other shards are complete: rerun the same "
                             "command to resume and merge (the output was not written)", exit_status=1)
        return merge(cfg.output, shards, order)


def _run_shard(action: Callable[[Any], Any], cfg: ShardedConfig, threads: int, command: str) -> None:
    """A shard process: its one-line errors as the command's, its exit status as the command's."""
    if cfg.device == "cpu":
        torch.set_num_threads(threads)
    try:
        action(cfg)
    except UsageError as error:
        print(f"hiersum {command} shard={cfg.shard}: error: {error}", file=sys.stderr)
        sys.exit(2)
    except RunStopped as stopped:
        print(f"hiersum {command} shard={cfg.shard}: {stopped}", file=sys.stderr)
        sys.exit(stopped.exit_status)


def _input_order(source: str, input_format: str, layout: dict[str, Any]) -> list[str | None]:
    """The id of each record of the input, in input order (None for a malformed one); ``layout``: a line pair's
    separators (:func:`hiersum.data.formats.read_records`)."""
    records = list(read_records(source, input_format=input_format, layout=layout))  # an InputError: a usage error
    return [None if isinstance(item, RecordError) else item.id for item in records]


def _complete(shard: Shard, output: str, order: list[str | None]) -> bool:
    path = shard.output(output)
    wanted = {record_id for position, record_id in enumerate(order) if record_id and shard.keeps(position)}
    return path.is_file() and wanted <= set(completed_ids(path))


def merge(output: str | Path, shards: list[Shard], order: list[str | None]) -> int:
    """Write the lines of the shards' outputs into ``output`` in input order (``order``: the input's ids,
    None for a malformed record), and their errors and the first shard's provenance (less ``shard``) beside
    it; each file replaced at once. Returns the number of lines written."""
    output = Path(output)
    lines: dict[str, bytes] = {}
    errors: list[dict[str, Any]] = []
    for shard in shards:
        path = shard.output(output)
        lines.update((json.loads(line)["id"], line) for line in path.read_bytes().splitlines(keepends=True))
        if errors_path(path).is_file():
            errors += [json.loads(line) for line in errors_path(path).read_text(encoding="utf-8").splitlines()]
    missing = [record_id for record_id in order if record_id is not None and record_id not in lines]
    if missing:
        raise RunStopped(f"the shards lack {len(missing)} records (e.g. {missing[0]!r}); rerun the same command "
                         "to complete them", exit_status=1)
    write_bytes_atomically(output, b"".join(lines[record_id] for record_id in order if record_id is not None))
    write_errors(errors_path(output), [RecordError.from_record(e) for e in sorted(errors, key=lambda e: e["line"])])
    provenance = json.loads(provenance_path(shards[0].output(output)).read_text(encoding="utf-8"))
    provenance["options"].pop("shard", None)
    provenance_path(output).write_text(json.dumps(provenance, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return sum(record_id is not None for record_id in order)
