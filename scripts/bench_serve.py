"""Load on ``hiersum serve``: latency, throughput, the dynamic-batching gain and the cost of the key check.

    python scripts/bench_serve.py                                    # newest outputs/train/*/checkpoints/last.ckpt
    python scripts/bench_serve.py --checkpoint CKPT --clients 1 8 32 64 --requests 128
    python scripts/bench_serve.py --checkpoint CKPT --requests 64 --option decode.max_length=20

For each ``max_batch_size`` of ``--batch-sizes`` (default 1 and 16) a server with a key (``api_key=``, every
request sends it in ``X-API-Key``) is started on 127.0.0.1 at a free port (``hiersum serve``, its log in a
temporary folder), and a twin of the largest batch size without a key (``--no-keyless`` leaves it out); then for
1, 8, 32 and 64 concurrent clients (threads, one request at a time each) each server in turn gets ``--requests``
requests, ``--rounds`` times (servers alternate within a round: A B C A B C ...): the records of
``data/sample/test.jsonl`` in turn, with the server's default decoding (or ``--option decode.*=``). Traffic goes
only to the servers it started; every level is a bounded number of requests, each bounded in time
(``--timeout``, seconds), and the servers are stopped by SIGTERM at the end.

Prints one JSON object: per server and client count, the round of median requests/s (requests answered, p50,
p95 and p99 latency in s, requests/s), every round's requests/s and the errors of all rounds (any status but
200, or no answer); the batching gain, median requests/s with the largest batch size over the smallest, per
client count (both with keys); and the key check's cost, per client count the median over rounds of the p50
latency with the key over the p50 of the keyless twin in the same round.
"""

from __future__ import annotations

import argparse
import asyncio
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
KEY = "bench-serve-key"
KEYLESS = "keyless"
"""The name of the twin server without a key (the others are named by their batch size)."""


def newest_checkpoint() -> Path:
    runs = sorted((ROOT / "outputs" / "train").glob("*/checkpoints/last.ckpt"), key=lambda path: path.stat().st_mtime)
    if not runs:
        sys.exit("bench_serve.py: no outputs/train/*/checkpoints/last.ckpt: run `make train` or pass --checkpoint")
    return runs[-1]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def drive(url: str, bodies: list[dict[str, Any]], clients: int, timeout: float, key: str | None
          ) -> dict[str, Any]:
    """``len(bodies)`` requests from ``clients`` threads (with ``key``): answered, errors, p50/p95/p99 latency,
    requests/s."""

    def one(body: dict[str, Any]) -> tuple[bool, float]:
        start = time.perf_counter()
        try:
            status, _ = post_json(f"{url}/summarize", body, timeout=timeout, key=key)
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
            "p99_s": round(percentile(latencies, 0.99), 4) if latencies else None,
            "requests_per_s": round(len(latencies) / wall, 3), "wall_s": round(wall, 2)}


def median_round(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The round of median requests/s, with every round's requests/s and the errors of all rounds."""
    ordered = sorted(results, key=lambda result: result["requests_per_s"])
    return {**ordered[(len(ordered) - 1) // 2], "errors": sum(result["errors"] for result in results),
            "requests_per_s_rounds": [result["requests_per_s"] for result in results]}


def start_server(checkpoint: Path, name: str, batch_size: int, key: str | None, args: argparse.Namespace,
                 log_dir: Path) -> tuple[subprocess.Popen, str]:
    """``hiersum serve`` with ``max_batch_size=batch_size`` (and ``api_key=key``) on a free port of 127.0.0.1:
    (process, URL)."""
    port = free_port()
    with open(log_dir / f"server-{name}.log", "w", encoding="utf-8") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "hiersum", "serve", f"checkpoint={checkpoint}", f"port={port}",
             f"max_batch_size={batch_size}", f"batch_timeout={args.batch_timeout}", "log_level=warning",
             f"timeout={args.timeout}", *([f"api_key={key}"] if key else []),
             f"hydra.run.dir={log_dir / f'run-{name}'}", *args.option],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    return server, f"http://127.0.0.1:{port}"


def bench(checkpoint: Path, args: argparse.Namespace, bodies: list[dict[str, Any]], log_dir: Path
          ) -> tuple[dict[str, dict[str, Any]], dict[str, list[float]]]:
    """One server per batch size (with the key) and the keyless twin, all started first; then, per client count,
    each server in turn (so that the load of a shared machine, which drifts over minutes, weighs on every side of
    a comparison alike). Also: per client count, the ratio of p50 latencies keyed / keyless of each round."""
    plan = {str(size): (size, KEY) for size in args.batch_sizes}
    if args.keyless:
        plan[KEYLESS] = (max(args.batch_sizes), None)
    servers = {name: (*start_server(checkpoint, name, size, key, args, log_dir), key)
               for name, (size, key) in plan.items()}
    runs: dict[str, dict[str, Any]] = {name: {} for name in servers}
    key_ratios: dict[str, list[float]] = {}
    keyed = str(max(args.batch_sizes))
    try:
        for server, url, key in servers.values():
            wait_until_healthy(url, server, timeout=START_SECONDS)
            drive(url, bodies[: max(args.clients)], max(args.clients), args.timeout, key)  # warm-up, not counted
        for clients in args.clients:
            rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in servers}
            for _ in range(args.rounds):
                for name, (_, url, key) in servers.items():
                    rounds[name].append(drive(url, bodies, clients, args.timeout, key))
            for name, results in rounds.items():
                runs[name][str(clients)] = median_round(results)
            if args.keyless:
                pairs = zip(rounds[keyed], rounds[KEYLESS], strict=True)
                key_ratios[str(clients)] = [round(a["p50_s"] / b["p50_s"], 3) for a, b in pairs
                                            if a["p50_s"] and b["p50_s"]]
    finally:
        for server, _, _ in servers.values():
            server.terminate()
        for server, _, _ in servers.values():
            server.wait(timeout=120)
    return runs, key_ratios


def key_check_cost(checkpoint: Path, *, blocks: int = 20, calls: int = 500) -> dict[str, Any]:
    """The key check alone, in this process: ``GET /info`` (a route that needs no worker) of the server's ASGI app
    with a key (LitServe's X-API-Key check, the key sent) and of one without, in alternating blocks of ``calls``
    requests; the median over blocks of microseconds a request, each side, and of the per-block-pair ratio."""
    from hiersum.config import ServeConfig
    from hiersum.serving.client import asgi_request
    from hiersum.serving.server import build_server

    keyless = build_server(ServeConfig(checkpoint=str(checkpoint))).app  # its routes check nothing
    keyed = build_server(ServeConfig(checkpoint=str(checkpoint)), key=KEY).app  # LitServe's key: a global, last
    apps = {"keyed": (keyed, {"X-API-Key": KEY}), "keyless": (keyless, {})}
    times: dict[str, list[float]] = {name: [] for name in apps}

    async def block(app: Any, headers: dict[str, str]) -> float:
        start = time.perf_counter()
        for _ in range(calls):
            status, _ = await asgi_request(app, "GET", "/info", headers)
            assert status == 200, status
        return (time.perf_counter() - start) / calls * 1e6

    for _ in range(blocks):
        for name, (app, headers) in apps.items():
            times[name].append(asyncio.run(block(app, headers)))
    ratios = [keyed / keyless for keyed, keyless in zip(times["keyed"], times["keyless"], strict=True)]
    return {"requests_per_block": calls, "blocks": blocks,
            **{f"{name}_us_per_request_median": round(statistics.median(values), 1) for name, values in times.items()},
            "ratio_median": round(statistics.median(ratios), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, help="default: the newest outputs/train/*/checkpoints/last.ckpt")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--requests", type=int, default=128, help="requests per client count")
    parser.add_argument("--batch-timeout", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=3, help="rounds per client count; the median one is shown")
    parser.add_argument("--timeout", type=float, default=300, help="seconds a request may take")
    parser.add_argument("--no-keyless", dest="keyless", action="store_false",
                        help="leave out the keyless twin (the key check's cost is then not measured)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="an option of hiersum serve (repeatable), e.g. decode.max_length=20")
    args = parser.parse_args()
    checkpoint = args.checkpoint or newest_checkpoint()
    records = [json.loads(line) for line in RECORDS.read_text(encoding="utf-8").splitlines()]
    bodies = [records[i % len(records)] for i in range(args.requests)]
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as folder:
        runs, key_ratios = bench(checkpoint, args, bodies, Path(folder))
    low, high = str(min(args.batch_sizes)), str(max(args.batch_sizes))
    gain = {clients: round(runs[high][clients]["requests_per_s"] / runs[low][clients]["requests_per_s"], 2)
            for clients in runs[low] if runs[low][clients]["requests_per_s"]}
    key_cost = {clients: {"p50_ratio_rounds": ratios, "median": round(statistics.median(ratios), 3)}
                for clients, ratios in key_ratios.items() if ratios}
    key_cost["in_process"] = key_check_cost(checkpoint)
    print(json.dumps({"checkpoint": str(checkpoint), "requests_per_level": args.requests, "options": args.option,
                      "servers": runs, f"batching_gain_{high}_over_{low}": gain,
                      f"key_cost_p50_keyed_over_keyless_batch_{high}": key_cost}, indent=1))


if __name__ == "__main__":
    main()
