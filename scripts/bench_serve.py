"""Load on ``hiersum serve``: latency, throughput and the dynamic-batching gain.

    python scripts/bench_serve.py                                    # newest outputs/train/*/checkpoints/last.ckpt
    python scripts/bench_serve.py --checkpoint CKPT --clients 1 8 32 64 --requests 128
    python scripts/bench_serve.py --checkpoint CKPT --requests 64 --option decode.max_length=20

For each ``max_batch_size`` of ``--batch-sizes`` (default 1 and 16) a server is started on 127.0.0.1 at a free
port (``hiersum serve``, its log in a temporary folder); then for 1, 8, 32 and 64 concurrent clients (threads,
one request at a time each) each server in turn gets ``--requests`` requests, ``--rounds`` times: the records of
``data/sample/test.jsonl`` in turn, with the server's default decoding (or ``--option decode.*=``). Traffic
goes only to the servers it started; every level is a bounded number of requests, each bounded in time
(``--timeout``, seconds), and the servers are stopped by SIGTERM at the end.

Prints one JSON object: per batch size and client count, the round of median requests/s (requests answered,
p50 and p95 latency in s, requests/s), every round's requests/s and the errors of all rounds (any status but
200, or no answer); and the batching gain, median requests/s with the largest
batch size over the smallest, per client count.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from hiersum.serving.client import free_port, post_json, wait_until_healthy

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "data" / "sample" / "test.jsonl"
START_SECONDS = 180


def newest_checkpoint() -> Path:
    runs = sorted((ROOT / "outputs" / "train").glob("*/checkpoints/last.ckpt"), key=lambda path: path.stat().st_mtime)
    if not runs:
        sys.exit("bench_serve.py: no outputs/train/*/checkpoints/last.ckpt: run `make train` or pass --checkpoint")
    return runs[-1]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def drive(url: str, bodies: list[dict[str, Any]], clients: int, timeout: float) -> dict[str, Any]:
    """``len(bodies)`` requests from ``clients`` threads: answered, errors, p50/p95 latency, requests/s."""

    def one(body: dict[str, Any]) -> tuple[bool, float]:
        start = time.perf_counter()
        try:
            status, _ = post_json(f"{url}/summarize", body, timeout=timeout)
        except OSError:
            status = 0
        return status == 200, time.perf_counter() - start

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        results = list(pool.map(one, bodies))
    wall = time.perf_counter() - start
    latencies = [latency for ok, latency in results if ok]
    return {"answered": len(latencies), "errors": len(results) - len(latencies),
            "p50_s": round(statistics.median(latencies), 4) if latencies else None,
            "p95_s": round(percentile(latencies, 0.95), 4) if latencies else None,
            "requests_per_s": round(len(latencies) / wall, 3), "wall_s": round(wall, 2)}


def median_round(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The round of median requests/s, with every round's requests/s and the errors of all rounds."""
    ordered = sorted(results, key=lambda result: result["requests_per_s"])
    return {**ordered[(len(ordered) - 1) // 2], "errors": sum(result["errors"] for result in results),
            "requests_per_s_rounds": [result["requests_per_s"] for result in results]}


def start_server(checkpoint: Path, batch_size: int, args: argparse.Namespace, log_dir: Path
                 ) -> tuple[subprocess.Popen, str]:
    """``hiersum serve`` with ``max_batch_size=batch_size`` on a free port of 127.0.0.1: (process, URL)."""
    port = free_port()
    with open(log_dir / f"server-{batch_size}.log", "w", encoding="utf-8") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "hiersum", "serve", f"checkpoint={checkpoint}", f"port={port}",
             f"max_batch_size={batch_size}", f"batch_timeout={args.batch_timeout}", "log_level=warning",
             f"hydra.run.dir={log_dir / f'run-{batch_size}'}", *args.option],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    return server, f"http://127.0.0.1:{port}"


def bench(checkpoint: Path, args: argparse.Namespace, bodies: list[dict[str, Any]], log_dir: Path
          ) -> dict[str, dict[str, Any]]:
    """One server per batch size, all started first; then, per client count, each server in turn (so that the
    load of a shared machine, which drifts over minutes, weighs on both sides of a comparison alike)."""
    servers = {size: start_server(checkpoint, size, args, log_dir) for size in args.batch_sizes}
    runs: dict[str, dict[str, Any]] = {str(size): {} for size in args.batch_sizes}
    try:
        for server, url in servers.values():
            wait_until_healthy(url, server, timeout=START_SECONDS)
            drive(url, bodies[: max(args.clients)], max(args.clients), args.timeout)  # warm-up, not counted
        for clients in args.clients:
            rounds: dict[int, list[dict[str, Any]]] = {size: [] for size in servers}
            for _ in range(args.rounds):
                for size, (_, url) in servers.items():
                    rounds[size].append(drive(url, bodies, clients, args.timeout))
            for size, results in rounds.items():
                runs[str(size)][str(clients)] = median_round(results)
    finally:
        for server, _ in servers.values():
            server.terminate()
        for server, _ in servers.values():
            server.wait(timeout=120)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, help="default: the newest outputs/train/*/checkpoints/last.ckpt")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--requests", type=int, default=128, help="requests per client count")
    parser.add_argument("--batch-timeout", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=3, help="rounds per client count; the median one is shown")
    parser.add_argument("--timeout", type=float, default=300, help="seconds a request may take")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="an option of hiersum serve (repeatable), e.g. decode.max_length=20")
    args = parser.parse_args()
    checkpoint = args.checkpoint or newest_checkpoint()
    records = [json.loads(line) for line in RECORDS.read_text(encoding="utf-8").splitlines()]
    bodies = [records[i % len(records)] for i in range(args.requests)]
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as folder:
        runs = bench(checkpoint, args, bodies, Path(folder))
    low, high = str(min(args.batch_sizes)), str(max(args.batch_sizes))
    gain = {clients: round(runs[high][clients]["requests_per_s"] / runs[low][clients]["requests_per_s"], 2)
            for clients in runs[low] if runs[low][clients]["requests_per_s"]}
    print(json.dumps({"checkpoint": str(checkpoint), "requests_per_level": args.requests, "options": args.option,
                      "max_batch_size": runs, f"batching_gain_{high}_over_{low}": gain}, indent=1))


if __name__ == "__main__":
    main()
