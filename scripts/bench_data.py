"""Memory and time of ``hiersum train debug=fast_dev_run`` as the corpus grows, once its splits are prepared.

    python scripts/bench_data.py                       # 200 vs 25,000 Multi-News clusters
    python scripts/bench_data.py --examples 2500 --keep

Builds two Multi-News corpora in a temporary folder from the shared sample
(``../shared/data/multi-news-sample/validation.jsonl``, 250 clusters): the large one repeats the sample
until it holds ``--examples`` clusters, each copy with new ids (``copy<k>-<line>``), as its train,
validation and test splits; the small one holds the first ``--small`` clusters of it. Each corpus is
trained on with the same command (``data=multinews debug=fast_dev_run``, its own prepared-data cache)
1 + ``--repeats`` times: the first run trains the tokenizer and prepares the splits, the later ones
find them prepared ("second": their fastest wall time, the machine being shared and noisy, and their
highest peak memory).

Prints one JSON object: for each corpus and run, the wall time and the peak resident memory of the
``hiersum train`` process (``ru_maxrss`` of that child, from ``os.wait4``); and the ratios large / small
of the "second" figures against the targets of issue 10 (memory at most 1.25x, time at most 2x).

``--datasets`` measures reading ``datasets`` corpora instead (:mod:`hiersum.data.formats.arrow`)::

    python scripts/bench_data.py --datasets            # 200 vs 25,000 clusters, save_to_disk and parquet

``--prepare`` measures ``hiersum prepare`` itself (issue 30)::

    python scripts/bench_data.py --prepare --examples 1000000 --small 10000 --workers 2

A train split of ``--examples`` examples drawn by the sample generator (``make_example``, one ``Random(1)``,
written a line at a time into a temporary folder; ``--small``: its first examples, a second corpus; validation and
test: the first 200 examples) and a tokenizer trained on the paragraphs of the first 2,000 (``tokenizer.json``).
For each corpus, in child processes: ``hiersum prepare data=jsonl splits=[train] tokenizer.path=...
data.prepare_workers=W`` (wall time, CPU time with its workers, peak RSS), then the same text (each example's
title, paragraphs and summary, 256 examples a batch; ``--limit-examples``: the first ones only) through the
tokenizer's own batch encoding alone on one thread (``SubwordTokenizer.encode_batch``: the limit per core), then
``hiersum train debug=fast_dev_run`` 1 + ``--repeats`` times on the prepared corpus (``--repeats 0``: no training,
prepare and the limit alone, as the A B comparisons of two checkouts in docs/benchmarks.md run). Reports examples/s and
tokens/s of both, prepare's share of the limit per core used (wall) and per CPU second, the ratio of prepare's
peak RSS at ``--examples`` to that at ``--small``, and that of the fastest later training run.

The same clusters written by ``datasets`` (a child process: ``Dataset.from_generator``, then
``DatasetDict.save_to_disk`` and ``Dataset.to_parquet``) as the train split of a ``save_to_disk`` folder and
of a parquet folder; a child process then streams every record of the split (``FormatSpec.split_records`` of
``data=multinews``, each row parsed into an ``Example``). Prints its wall time and peak RSS for each corpus and
layout, and the ratio large / small of the peaks (flat: at most 1.25x).
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

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SAMPLE = ROOT.parent / "shared" / "data" / "multi-news-sample" / "validation.jsonl"
SPLITS = ("train", "validation", "test")
TARGETS = {"peak_rss": 1.25, "wall_s": 2.0}


def build_corpus(folder: Path, lines: list[str], n_examples: int) -> int:
    """``folder/{train,validation,test}.jsonl``: ``n_examples`` clusters, the sample repeated with new ids.
    Written a line at a time: this process stays small, and so does the peak memory that a child
    forked from it reports (Linux counts the parent's resident size at the fork in the child's maxrss)."""
    folder.mkdir(parents=True)
    handles = [open(folder / f"{split}.jsonl", "w", encoding="utf-8") for split in SPLITS]
    size = 0
    try:
        for index in range(n_examples):
            copy, line = divmod(index, len(lines))
            record = json.loads(lines[line])
            record["id"] = f"copy{copy}-{line}"
            text = json.dumps(record, ensure_ascii=False) + "\n"
            size += len(text.encode("utf-8"))
            for handle in handles:
                handle.write(text)
    finally:
        for handle in handles:
            handle.close()
    return size


def run_train(corpus: Path, cache: Path, run_dir: Path, extra: list[str]) -> dict[str, float]:
    """Wall time and peak RSS (MB) of one ``hiersum train`` process."""
    command = [str(Path(sys.executable).parent / "hiersum"), "train", "data=multinews", f"data.path={corpus}",
               f"data.cache_dir={cache}", "debug=fast_dev_run", f"hydra.run.dir={run_dir}", *extra]
    return run_child(command)[0]


LAYOUTS = ("save_to_disk", "parquet")
STREAM = ("import sys\nfrom hiersum.data.formats.registry import format_spec\n"
          "print(sum(1 for record in format_spec('multinews').split_records(sys.argv[1], 'train')))")
"""The reading child of ``--datasets``: counts the records of the train split of the corpus ``argv[1]``."""


def write_datasets(folder: Path, n_examples: int) -> None:
    """``folder/{save_to_disk,parquet}``: the train split of ``n_examples`` clusters (the sample repeated with
    new ids), written by ``datasets`` (run in a child: ``--write-datasets``, so this process stays small)."""
    from datasets import Dataset, DatasetDict

    lines = [line for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]

    def records():
        for index in range(n_examples):
            copy, line = divmod(index, len(lines))
            yield {**json.loads(lines[line]), "id": f"copy{copy}-{line}"}

    dataset = Dataset.from_generator(records, cache_dir=str(folder / "hf-cache"))
    DatasetDict({"train": dataset}).save_to_disk(str(folder / "save_to_disk"))
    (folder / "parquet").mkdir()
    dataset.to_parquet(str(folder / "parquet" / "train.parquet"))
    shutil.rmtree(folder / "hf-cache")


def run_child(command: list[str], env: dict[str, str] | None = None) -> tuple[dict[str, float], str]:
    """Wall time, CPU time (user + system, with the children it waited for) and peak RSS (MB) of one child
    process (``ru_maxrss`` of that child, from ``os.wait4``), and its stdout; ``env``: added to the environment."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=errors,
                                   env={**os.environ, **(env or {})})
        stdout = process.stdout.read()  # type: ignore[union-attr]
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            errors.seek(0)
            raise SystemExit(f"{' '.join(command)} failed:\n{errors.read().decode(errors='replace')[-3000:]}")
    figures = {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
               "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}  # ru_maxrss: KiB
    return figures, stdout.decode()


def bench_datasets(args: argparse.Namespace) -> dict:
    """``--datasets``: peak RSS and time of streaming the train split of each corpus size and layout."""
    workdir = Path(tempfile.mkdtemp(prefix="bench_datasets-", dir=args.workdir))
    report: dict = {"reader": "FormatSpec.split_records (data=multinews), every record of the train split",
                    "sample": str(SAMPLE), "workdir": str(workdir) if args.keep else None, "corpora": {}}
    try:
        for n in (args.small, args.examples):
            folder = workdir / f"multinews-{n}"
            folder.mkdir()
            subprocess.run([sys.executable, __file__, "--write-datasets", str(folder), str(n)], check=True,
                           stderr=subprocess.DEVNULL)
            entry = {}
            for layout in LAYOUTS:
                figures, stdout = run_child([sys.executable, "-c", STREAM, str(folder / layout)])
                size = sum(path.stat().st_size for path in (folder / layout).rglob("*") if path.is_file())
                entry[layout] = {"records": int(stdout.strip()), "files_mb": round(size / 2**20, 1), **figures}
                print(f"{n} examples, {layout}: {entry[layout]}", file=sys.stderr)
            report["corpora"][str(n)] = entry
        small, large = report["corpora"][str(args.small)], report["corpora"][str(args.examples)]
        report["peak_rss_ratio"] = {layout: round(large[layout]["peak_rss_mb"] / small[layout]["peak_rss_mb"], 3)
                                    for layout in LAYOUTS}
        report["target"] = TARGETS["peak_rss"]
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return report


PREPARE_LIMIT = """
import json, sys, time
from hiersum.data.formats.lines import split_paragraphs
from hiersum.data.tokenizer import load_tokenizer
tokenizer = load_tokenizer(sys.argv[2])
examples = tokens = 0
started, cpu = time.perf_counter(), time.process_time()
batch = []
def flush():
    global tokens
    tokens += sum(len(ids) for ids in tokenizer.encode_batch(batch))
    batch.clear()
with open(sys.argv[1], encoding="utf-8") as split:
    for line in split:
        record = json.loads(line)
        batch += [record["title"], *(p for d in record["documents"] for p in split_paragraphs(d)), record["summary"]]
        examples += 1
        if examples % 256 == 0:
            flush()
        if examples == int(sys.argv[3]):
            break
flush()
print(json.dumps({"examples": examples, "tokens": tokens, "encode_s": time.perf_counter() - started,
                  "encode_cpu_s": time.process_time() - cpu}))
"""
"""A child: the text that ``hiersum prepare`` tokenizes (each example's title, paragraphs and summary; the
generator's examples keep every paragraph under ``data=jsonl``'s 24) through ``encode_batch`` alone, 256 examples
a batch, on one thread (``TOKENIZERS_PARALLELISM=false``): the limit per core. ``argv[3]``: at most that many
examples (``--limit-examples``: a rate needs no million examples)."""


def write_generated_split(path: Path, n_examples: int, *, seed: int = 1) -> None:
    """``n_examples`` examples of the sample generator, one JSON line each, written as they are drawn."""
    from hiersum.data.sample_generator import make_example

    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as handle:
        for index in range(n_examples):
            handle.write(json.dumps(make_example(rng, f"train-{index:07d}").to_record(), ensure_ascii=False) + "\n")


def generated_corpora(workdir: Path, sizes: tuple[int, int]) -> list[Path]:
    """A folder per size in ``sizes`` (small, large): ``train.jsonl`` (the large corpus's first examples for the
    small one), ``validation.jsonl`` and ``test.jsonl`` (the first 200 examples, the same in both); and
    ``workdir/tokenizer.json`` trained on the paragraphs of the first 2,000 examples."""
    from hiersum.data.formats.lines import split_paragraphs
    from hiersum.data.tokenizer import train_tokenizer

    small, large = (workdir / f"generated-{n}" for n in sizes)
    large.mkdir()
    write_generated_split(large / "train.jsonl", sizes[1])
    small.mkdir()
    with open(large / "train.jsonl", encoding="utf-8") as source:
        first = [line for _, line in zip(range(sizes[0]), source, strict=False)]
    (small / "train.jsonl").write_text("".join(first), encoding="utf-8")
    for corpus in (small, large):
        for split in ("validation", "test"):
            (corpus / f"{split}.jsonl").write_text("".join(first[:200]), encoding="utf-8")
    texts = [paragraph for line in first[:2000] for document in json.loads(line)["documents"]
             for paragraph in split_paragraphs(document)]
    (workdir / "tokenizer.json").write_text(train_tokenizer(texts, vocab_size=8000).to_str(), encoding="utf-8")
    return [small, large]


def bench_prepare(args: argparse.Namespace) -> dict:
    """``--prepare``: ``hiersum prepare`` against the tokenizer's batch encoding alone, at two corpus sizes, and
    ``hiersum train debug=fast_dev_run`` on each prepared corpus."""
    workdir = Path(tempfile.mkdtemp(prefix="bench_prepare-", dir=args.workdir))
    workers = args.workers or os.cpu_count() or 1
    report: dict = {"workers": workers, "cpus": os.cpu_count(), "load_average": os.getloadavg(), "corpora": {}}
    try:
        tokenizer_file = workdir / "tokenizer.json"
        for corpus in generated_corpora(workdir, (args.small, args.examples)):
            common = ["data=jsonl", f"data.path={corpus}", f"tokenizer.path={tokenizer_file}",
                      f"data.cache_dir={workdir / 'cache'}"]
            n = sum(1 for _ in open(corpus / "train.jsonl", encoding="utf-8"))
            prepared, _ = run_child([str(BIN / "hiersum"), "prepare", "splits=[train]",
                                     f"data.prepare_workers={workers}", *common,
                                     f"hydra.run.dir={workdir / ('run-' + corpus.name)}"])
            limit_figures, stdout = run_child([sys.executable, "-c", PREPARE_LIMIT, str(corpus / "train.jsonl"),
                                               str(tokenizer_file), str(args.limit_examples)],
                                              env={"TOKENIZERS_PARALLELISM": "false"})
            limit = json.loads(stdout)
            # the limit's tokens per example stand for the whole corpus when it read only the first examples
            tokens = round(limit["tokens"] * n / limit["examples"])
            entry = {"examples": n, "tokens": tokens, "prepare": {
                **prepared, "examples_per_s": round(n / prepared["wall_s"], 1),
                "tokens_per_s": round(tokens / prepared["wall_s"])},
                "encode_batch_alone": {**limit_figures, "examples": limit["examples"], "tokens": limit["tokens"],
                                       "encode_s": round(limit["encode_s"], 2),
                                       "encode_cpu_s": round(limit["encode_cpu_s"], 2),
                                       "examples_per_s": round(limit["examples"] / limit["encode_s"], 1),
                                       "tokens_per_s": round(limit["tokens"] / limit["encode_s"])}}
            entry["prepare_per_core_share_of_limit"] = round(
                entry["prepare"]["tokens_per_s"] / workers / entry["encode_batch_alone"]["tokens_per_s"], 3)
            entry["prepare_per_cpu_second_share_of_limit"] = round(
                limit["encode_cpu_s"] * n / limit["examples"] / prepared["cpu_s"], 3)
            entry["train_fast_dev_run"] = [
                run_child([str(BIN / "hiersum"), "train", *common, "debug=fast_dev_run",
                           f"hydra.run.dir={workdir / f'train-{corpus.name}-{k}'}"])[0]
                for k in range(1 + args.repeats)] if args.repeats else []
            report["corpora"][str(n)] = entry
            print(f"{n} examples: {entry}", file=sys.stderr)
        small, large = report["corpora"].values()
        report["prepare_peak_rss_ratio"] = round(large["prepare"]["peak_rss_mb"] / small["prepare"]["peak_rss_mb"], 3)
        if args.repeats:  # the first train run prepares the validation split; the later ones find every split prepared
            fastest = [min(run["wall_s"] for run in entry["train_fast_dev_run"][1:]) for entry in (small, large)]
            report["train_start_ratio"] = round(fastest[1] / fastest[0], 3)
        report["load_average_after"] = os.getloadavg()
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=25_000, help="clusters of the large corpus")
    parser.add_argument("--small", type=int, default=200, help="clusters of the small corpus (its first ones)")
    parser.add_argument("--workdir", type=Path, default=None, help="where to build the corpora (default: a temp dir)")
    parser.add_argument("--repeats", type=int, default=2,
                        help="runs once prepared (the fastest wall time and the highest peak memory count)")
    parser.add_argument("--keep", action="store_true", help="keep the corpora, caches and runs")
    parser.add_argument("overrides", nargs="*", help="more hiersum train overrides")
    parser.add_argument("--datasets", action="store_true",
                        help="measure streaming datasets corpora (save_to_disk, parquet) instead of training")
    parser.add_argument("--write-datasets", nargs=2, metavar=("FOLDER", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--prepare", action="store_true",
                        help="measure hiersum prepare on a generated corpus against the tokenizer's batch encoding")
    parser.add_argument("--workers", type=int, default=None, help="--prepare: data.prepare_workers (default: cores)")
    parser.add_argument("--limit-examples", type=int, default=0,
                        help="--prepare: the tokenizer-alone limit reads only the first examples (0: all)")
    args = parser.parse_args()
    if args.prepare:
        print(json.dumps(bench_prepare(args), indent=1))
        return
    if not SAMPLE.is_file():
        raise SystemExit(f"the Multi-News sample is missing: expected {SAMPLE}")
    if args.write_datasets:
        write_datasets(Path(args.write_datasets[0]), int(args.write_datasets[1]))
        return
    if args.datasets:
        print(json.dumps(bench_datasets(args), indent=1))
        return
    lines = [line for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    workdir = Path(tempfile.mkdtemp(prefix="bench_data-", dir=args.workdir))
    report: dict = {"command": "hiersum train data=multinews debug=fast_dev_run " + " ".join(args.overrides),
                    "sample": str(SAMPLE), "workdir": str(workdir) if args.keep else None, "corpora": {}}
    try:
        for n in (args.small, args.examples):
            corpus = workdir / f"multinews-{n}"
            size = build_corpus(corpus, lines, n)
            runs = {}
            for attempt in ["first", *(f"second-{k}" for k in range(args.repeats))]:
                runs[attempt] = run_train(corpus, workdir / f"cache-{n}", workdir / f"run-{n}-{attempt}",
                                          args.overrides)
                print(f"{n} examples, {attempt} run: {runs[attempt]}", file=sys.stderr)
            later = [runs.pop(f"second-{k}") for k in range(args.repeats)]
            runs["second"] = {"wall_s": min(r["wall_s"] for r in later),
                              "peak_rss_mb": max(r["peak_rss_mb"] for r in later), "runs": later}
            report["corpora"][str(n)] = {"examples": n, "split_mb": round(size / 2**20, 1), **runs}
        small, large = report["corpora"][str(args.small)]["second"], report["corpora"][str(args.examples)]["second"]
        ratios = {"peak_rss": round(large["peak_rss_mb"] / small["peak_rss_mb"], 3),
                  "wall_s": round(large["wall_s"] / small["wall_s"], 3)}
        report["second_run_ratio"] = ratios
        report["targets"] = TARGETS
        report["meets_targets"] = all(ratios[name] <= TARGETS[name] for name in TARGETS)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
