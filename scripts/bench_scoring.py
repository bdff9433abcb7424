"""Time and memory of ``hiersum evaluate predictions=...`` on a large split, for several ``workers``.

    python scripts/bench_scoring.py                               # 100,000 pairs, workers 1 and 2
    python scripts/bench_scoring.py --examples 2000 --workers 1 2 --baselines lead

Writes, in a temporary folder, a native-JSONL ``test`` split of ``--examples`` examples drawn by the sample
generator (:func:`hiersum.data.sample_generator.make_example`, one ``Random(--seed)``) and a predictions file
(one line per example: its first paragraph's first sentence, then the first half of its reference), streaming
both. Then runs, for each ``--workers`` N, ``hiersum evaluate predictions=... data=jsonl split=test workers=N``
(with ``baselines=`` from ``--baselines``, default none, and ``bootstrap.samples`` from ``--bootstrap``) in a
child process and reports its wall time and peak RSS (``ru_maxrss`` from ``os.wait4``), and whether its
``metrics.json`` figures (less ``versions``) equal those of the first N.

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hiersum.data.sample_generator import make_example

BIN = Path(sys.executable).parent


def write_split(folder: Path, n_examples: int, seed: int) -> None:
    """``folder/test.jsonl`` and ``folder/predictions.jsonl``, one example (one prediction) a line."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    with open(folder / "test.jsonl", "w", encoding="utf-8") as split, \
            open(folder / "predictions.jsonl", "w", encoding="utf-8") as predictions:
        for index in range(n_examples):
            record = make_example(rng, f"test-{index:07d}").to_record()
            split.write(json.dumps(record, ensure_ascii=False) + "\n")
            words = record["summary"].split()
            first = record["documents"][0][0].split(". ")[0]
            summary = f"{first}. {' '.join(words[: len(words) // 2])}"
            predictions.write(json.dumps({"id": record["id"], "summary": summary}, ensure_ascii=False) + "\n")


def run_evaluate(folder: Path, workers: int, baselines: list[str], bootstrap: int) -> dict:
    run_dir = folder / f"run-workers{workers}"
    command = [str(BIN / "hiersum"), "evaluate", f"predictions={folder / 'predictions.jsonl'}", "data=jsonl",
               f"data.path={folder}", "split=test", f"workers={workers}", f"baselines=[{','.join(baselines)}]",
               f"bootstrap.samples={bootstrap}", f"hydra.run.dir={run_dir}"]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    stderr = process.stderr.read() if process.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"hiersum evaluate failed:\n{stderr[-3000:]}")
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    metrics.pop("versions", None)
    return {"command": " ".join(command[1:]), "wall_s": round(wall, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "metrics": metrics}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100_000, help="prediction/reference pairs")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="workers= values to time")
    parser.add_argument("--baselines", nargs="*", default=[], help="baselines scored beside (default: none)")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap.samples")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=None, help="where to write the split (default: a temp dir)")
    args = parser.parse_args()
    folder = args.workdir or Path(tempfile.mkdtemp(prefix="bench_scoring-"))
    try:
        started = time.perf_counter()
        write_split(folder, args.examples, args.seed)
        written = time.perf_counter() - started
        runs = {workers: run_evaluate(folder, workers, args.baselines, args.bootstrap) for workers in args.workers}
        first = runs[args.workers[0]]["metrics"]
        report = {"examples": args.examples, "baselines": args.baselines, "bootstrap": args.bootstrap,
                  "cpus": os.cpu_count(), "write_split_s": round(written, 1),
                  "runs": {workers: {key: value for key, value in run.items() if key != "metrics"} | {
                      "same_metrics_as_first": run["metrics"] == first} for workers, run in runs.items()}}
        print(json.dumps(report, indent=1))
    finally:
        if args.workdir is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
