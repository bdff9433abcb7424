"""Time the four baselines of ``hiersum evaluate`` (lead, lead3, oracle, lexrank) on large multi-document clusters.

    python scripts/bench_baselines.py                                  # 50 clusters of 25 articles, each baseline
    python scripts/bench_baselines.py --evaluate                       # and hiersum evaluate end to end
    python scripts/bench_baselines.py --clusters 5 --repeats 3 --baselines oracle lexrank

A cluster is ``--articles`` articles drawn (without replacement, one ``Random(--seed)``) from the Multi-News
validation sample (``--data``, default ``../shared/data/multi-news-sample/validation.jsonl``, read with hiersum's
Multi-News reader), its reference the summary of its first article's record: about 16,000 words of real news
for 25 articles. Without that file the articles are synthetic: paragraphs of the sample generator
(:func:`hiersum.data.sample_generator.make_example`) run together to ``--article-words`` words each.

Each baseline (:func:`hiersum.evaluation.baselines.baseline_summaries`) runs over all the clusters in this
process, ``--repeats`` times; ``seconds`` is the median wall time of its repeats, ``runs`` all of them,
``cpu_seconds`` the median CPU time (which other load on the machine moves less). With ``--evaluate``,
the clusters are written as a native-JSONL ``test`` split with a predictions file (each cluster's first sentence)
and ``hiersum evaluate predictions=... data=jsonl split=test baselines=[...] bootstrap.samples=0`` runs in a child
process (``python -m hiersum`` of the checkout this script imported hiersum from: ``PYTHONPATH`` picks it), timed
from start to exit: ``wall_s``, and
``cpu_s``, the CPU seconds of its threads (which other load on the machine moves less).

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import hiersum
from hiersum.data.formats.multinews import parse_multinews_record
from hiersum.data.sample_generator import make_example
from hiersum.data.schema import Example
from hiersum.evaluation.baselines import BASELINES, baseline_summaries

ROOT = Path(__file__).resolve().parent.parent
MULTINEWS_SAMPLE = ROOT.parent / "shared" / "data" / "multi-news-sample" / "validation.jsonl"


def multinews_articles(path: Path) -> list[tuple[list[str], str]]:
    """Every article (its paragraphs) of a Multi-News JSONL file with its record's reference, in file order."""
    articles = []
    with open(path, encoding="utf-8") as lines:
        for line, text in enumerate(lines, start=1):
            example = parse_multinews_record(text, path=str(path), line=line, require_summary=True)
            articles.extend((document, example.references[0]) for document in example.documents)
    return articles


def synthetic_articles(n_articles: int, article_words: int, seed: int) -> list[tuple[list[str], str]]:
    """``n_articles`` articles of sample-generator paragraphs, about ``article_words`` words each, with the
    summary of the first example each drew from."""
    rng = random.Random(seed)
    articles = []
    for index in range(n_articles):
        paragraphs: list[str] = []
        reference = ""
        while sum(len(p.split()) for p in paragraphs) < article_words:
            example = make_example(rng, f"synthetic-{index}")
            reference = reference or example.summary
            paragraphs.extend(p for document in example.documents for p in document)
        articles.append((paragraphs, reference))
    return articles


def clusters(articles: list[tuple[list[str], str]], n_clusters: int, per_cluster: int, seed: int) -> list[Example]:
    """``n_clusters`` examples of ``per_cluster`` articles each, drawn without replacement within a cluster."""
    if len(articles) < per_cluster:
        raise ValueError(f"{per_cluster} articles a cluster: expected at least as many articles, found {len(articles)}")
    rng = random.Random(seed)
    examples = []
    for index in range(n_clusters):
        drawn = [articles[i] for i in rng.sample(range(len(articles)), per_cluster)]
        examples.append(Example(id=f"cluster-{index:03d}", title="", documents=[paragraphs for paragraphs, _ in drawn],
                                references=[drawn[0][1]]))
    return examples


def bench_clusters(n_clusters: int, per_cluster: int, *, data: Path = MULTINEWS_SAMPLE, article_words: int = 640,
                   seed: int = 0) -> tuple[str, list[Example]]:
    """(source, clusters): real Multi-News articles when ``data`` exists, else synthetic ones."""
    if data.is_file():
        return str(data), clusters(multinews_articles(data), n_clusters, per_cluster, seed)
    articles = synthetic_articles(per_cluster * 4, article_words, seed)
    return "synthetic", clusters(articles, n_clusters, per_cluster, seed)


def time_baselines(examples: list[Example], baselines: list[str], repeats: int) -> dict:
    """Per baseline: the median wall time of ``repeats`` runs over ``examples`` (``seconds``), every run, and the
    median CPU time of this process's threads (``cpu_seconds``)."""
    timings = {}
    for name in baselines:
        runs, cpu_runs = [], []
        for _ in range(repeats):
            started, cpu_started = time.perf_counter(), time.process_time()
            baseline_summaries(name, examples)
            runs.append(round(time.perf_counter() - started, 3))
            cpu_runs.append(round(time.process_time() - cpu_started, 3))
        timings[name] = {"seconds": round(statistics.median(runs), 3), "runs": runs,
                         "cpu_seconds": round(statistics.median(cpu_runs), 3)}
    return timings


def write_split(folder: Path, examples: list[Example]) -> None:
    """``folder/test.jsonl`` (native records) and ``folder/predictions.jsonl`` (each example's first sentence)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "test.jsonl", "w", encoding="utf-8") as split, \
            open(folder / "predictions.jsonl", "w", encoding="utf-8") as predictions:
        for example in examples:
            record = {"id": example.id, "title": example.title, "documents": example.documents,
                      "summary": example.references[0]}
            split.write(json.dumps(record, ensure_ascii=False) + "\n")
            first = example.documents[0][0].split(". ")[0]
            predictions.write(json.dumps({"id": example.id, "summary": first}, ensure_ascii=False) + "\n")


def time_evaluate(folder: Path, baselines: list[str]) -> dict:
    """``hiersum evaluate`` of ``folder``'s predictions with ``baselines``, in a child process: its wall time."""
    command = [sys.executable, "-m", "hiersum", "evaluate", f"predictions={folder / 'predictions.jsonl'}",
               "data=jsonl", f"data.path={folder}", "split=test", f"baselines=[{','.join(baselines)}]",
               "bootstrap.samples=0", f"hydra.run.dir={folder / 'run'}"]
    started = time.perf_counter()
    # the hiersum this script imported, whatever the working directory (``-m`` puts it first on the path)
    checkout = str(Path(hiersum.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors, cwd=folder, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) != 0:
            errors.seek(0)
            raise SystemExit(f"hiersum evaluate failed:\n{errors.read().decode(errors='replace')[-3000:]}")
    return {"command": " ".join(command[2:]), "wall_s": round(wall, 1),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=50)
    parser.add_argument("--articles", type=int, default=25, help="articles a cluster")
    parser.add_argument("--article-words", type=int, default=640, help="words of a synthetic article")
    parser.add_argument("--baselines", nargs="+", default=list(BASELINES), choices=BASELINES)
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs of each baseline in this process (the median counts; 0: none, --evaluate alone)")
    parser.add_argument("--evaluate", action="store_true", help="also time hiersum evaluate end to end")
    parser.add_argument("--data", type=Path, default=MULTINEWS_SAMPLE, help="Multi-News JSONL to draw articles from")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    source, examples = bench_clusters(args.clusters, args.articles, data=args.data, article_words=args.article_words,
                                      seed=args.seed)
    words = [sum(len(p.split()) for document in e.documents for p in document) for e in examples]
    report = {"source": source, "clusters": len(examples), "articles": args.articles,
              "mean_words": round(statistics.mean(words)), "cpus": os.cpu_count(),
              "load_average": [round(load, 2) for load in os.getloadavg()],
              "baselines": time_baselines(examples, args.baselines, args.repeats) if args.repeats else {}}
    if args.evaluate:
        with tempfile.TemporaryDirectory(prefix="bench_baselines-") as folder:
            write_split(Path(folder), examples)
            report["evaluate"] = time_evaluate(Path(folder), args.baselines)
    print(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
