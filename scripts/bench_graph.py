"""Time the paragraph graphs of ``model.graph`` (:func:`hiersum.data.graph.paragraph_graph`) on P paragraphs.

    python scripts/bench_graph.py                                  # 10,000 paragraphs, both graphs
    python scripts/bench_graph.py --paragraphs 1000 3000 --kinds similarity --repeats 3

The paragraphs are Multi-News validation articles (``--data``, default
``../shared/data/multi-news-sample/validation.jsonl``) cut into pieces of ``--words`` words, in file order and
repeated from the start when they run out; without that file, the sample corpus's documents are cut the same way
(:func:`hiersum.data.sample_generator.make_example`). Each graph of each size is built ``--repeats`` times in this
process; ``seconds`` is the median wall time, ``runs`` all of them, ``cpu_seconds`` the median CPU time of the
process's threads (BLAS uses more than one: above the wall time on an idle machine, below it on a busy one).

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path

from hiersum.data.formats.multinews import parse_multinews_record
from hiersum.data.graph import paragraph_graph
from hiersum.data.sample_generator import make_example

ROOT = Path(__file__).resolve().parent.parent
MULTINEWS_SAMPLE = ROOT.parent / "shared" / "data" / "multi-news-sample" / "validation.jsonl"


def source_words(data: Path) -> tuple[str, list[str]]:
    """(source, words): every word of the Multi-News file's articles in order, or of 2,000 sample-corpus examples
    without it."""
    if data.is_file():
        with open(data, encoding="utf-8") as lines:
            examples = [parse_multinews_record(text, path=str(data), line=line) for line, text in enumerate(lines, 1)]
        return str(data), [word for example in examples for document in example.documents
                           for paragraph in document for word in paragraph.split()]
    rng = random.Random(0)
    examples = [make_example(rng, str(index)) for index in range(2000)]
    return "synthetic", [word for example in examples for document in example.documents
                         for paragraph in document for word in paragraph.split()]


def paragraphs(words: list[str], n_paragraphs: int, words_each: int) -> list[str]:
    """``n_paragraphs`` pieces of ``words_each`` consecutive words, starting over at the end of ``words``."""
    starts = range(0, len(words) - words_each + 1, words_each)
    pieces = [" ".join(words[start : start + words_each]) for start in starts]
    return [pieces[index % len(pieces)] for index in range(n_paragraphs)]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paragraphs", type=int, nargs="+", default=[10_000], help="paragraph counts P to time")
    parser.add_argument("--words", type=int, default=100, help="words a paragraph")
    parser.add_argument("--kinds", nargs="+", default=["similarity", "discourse"], choices=["similarity", "discourse"])
    parser.add_argument("--repeats", type=int, default=1, help="builds of each graph (the median counts)")
    parser.add_argument("--data", type=Path, default=MULTINEWS_SAMPLE, help="Multi-News JSONL to cut paragraphs from")
    args = parser.parse_args(argv)
    source, words = source_words(args.data)
    report: dict = {"source": source, "words_a_paragraph": args.words, "cpus": os.cpu_count(), "graphs": {}}
    for n_paragraphs in args.paragraphs:
        texts = paragraphs(words, n_paragraphs, args.words)
        for kind in args.kinds:
            runs, cpu_runs = [], []
            for _ in range(args.repeats):
                started, cpu_started = time.perf_counter(), time.process_time()
                paragraph_graph(texts, kind)
                runs.append(round(time.perf_counter() - started, 3))
                cpu_runs.append(round(time.process_time() - cpu_started, 3))
            report["graphs"][f"{kind} P={n_paragraphs}"] = {"seconds": round(statistics.median(runs), 3), "runs": runs,
                                                            "cpu_seconds": round(statistics.median(cpu_runs), 3)}
    report["load_average"] = [round(load, 2) for load in os.getloadavg()]
    print(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
