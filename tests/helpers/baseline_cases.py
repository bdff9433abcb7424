"""The inputs of the baselines' regression test and the recorder of their outputs.

``tests/evaluation/baseline_outputs.json`` holds, for each case, what :mod:`hiersum.evaluation.baselines` gave
when it was recorded (the four summaries and LexRank's whole order), so that a faster implementation is checked
to give the same. Last recorded when the baselines took their sentences from hiersum's one splitter (Punkt,
:mod:`hiersum.data.sentences`) instead of a regular expression: 25 of the 81 cases changed, each where the two
split the source differently.

The cases: the examples of ``tests/evaluation/test_baselines.py``; synthetic examples of the sample generator;
small-vocabulary word soups with repeated sentences (ties in the oracle's gains and LexRank's centralities); and,
where ``../shared`` is (``REAL`` cases, which skip without it), Multi-News validation records as they are and
clusters of 25 of their articles (about 16,000 words each, as ``scripts/bench_baselines.py`` builds them).

Record again (only on purpose: an intended change of the baselines' outputs) with

    PYTHONPATH=$PWD python -m tests.helpers.baseline_cases
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from hiersum.data.formats.multinews import parse_multinews_record
from hiersum.data.sample_generator import make_example
from hiersum.data.schema import Example
from hiersum.evaluation.baselines import BASELINE_FUNCTIONS, lexrank_order, source_sentences
from tests.helpers.paths import PROJECT_ROOT
from tests.helpers.scripts import load_script

OUTPUTS = PROJECT_ROOT / "tests" / "evaluation" / "baseline_outputs.json"
MULTINEWS = PROJECT_ROOT.parent / "shared" / "data" / "multi-news-sample" / "validation.jsonl"
REAL_PREFIX = "multinews-"
"""The cases built from ``MULTINEWS``."""

ADA = Example(
    id="x",
    title="Ada",
    documents=[
        ["Ada Lovelace was born in London in 1815. She loved poetry.", "The weather was cold that winter."],
        ["Ada Lovelace wrote the first computer program for the Analytical Engine. Many cite her."],
    ],
    references=["Ada Lovelace, born in London in 1815, wrote the first computer program."],
)
TEST_CASES = {
    "ada": ADA,
    "ada-long-reference": Example(id="y", title="", documents=ADA.documents, references=["word " * 200]),
    "two-sentences": Example(id="z", title="", documents=[["One here. Two there."]], references=["r"]),
    "best-reference": Example(id="y", title="", documents=[["Cats purr. Dogs bark. Birds sing."]],
                              references=["Fish swim.", "Dogs bark loudly."]),
    "central": Example(id="z", title="", documents=[["the cat sat on the mat", "the cat and the mat",
                                                     "a cat on a mat sat", "stocks fell on monday"]],
                       references=["one two three four five six"]),
}


def synthetic_cases(n: int = 30, seed: int = 7) -> dict[str, Example]:
    """``n`` sample-generator examples."""
    rng = random.Random(seed)
    cases = {}
    for index in range(n):
        example = make_example(rng, f"synthetic-{index}")
        cases[example.id] = Example(id=example.id, title=example.person.name, documents=example.documents,
                                    references=[example.summary])
    return cases


def word_soup_cases(n: int = 12, seed: int = 11) -> dict[str, Example]:
    """``n`` examples of sentences drawn from 20 words, a third of them repeated elsewhere in the example, one or
    two references of the same words."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(20)]

    def sentence() -> str:
        return " ".join(rng.choices(words, k=rng.randint(1, 9))) + "."

    cases = {}
    for index in range(n):
        sentences = [sentence() for _ in range(rng.randint(5, 60))]
        sentences += rng.choices(sentences, k=len(sentences) // 3)
        rng.shuffle(sentences)
        documents = [[" ".join(sentences[start : start + 3]) for start in range(0, len(sentences), 3)]]
        references = [" ".join(sentence() for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 2))]
        cases[f"soup-{index}"] = Example(id=f"soup-{index}", title="", documents=documents, references=references)
    return cases


def real_cases(n_records: int = 30, n_clusters: int = 4) -> dict[str, Example]:
    """The first ``n_records`` Multi-News validation records and ``n_clusters`` clusters of 25 of its articles
    (none without ``../shared``)."""
    if not MULTINEWS.is_file():
        return {}
    cases = {}
    with open(MULTINEWS, encoding="utf-8") as lines:
        for line, text in zip(range(1, n_records + 1), lines, strict=False):
            cases[f"{REAL_PREFIX}record-{line}"] = parse_multinews_record(text, path=str(MULTINEWS), line=line,
                                                                         require_summary=True)
    bench = load_script("bench_baselines")
    _, clusters = bench.bench_clusters(n_clusters, 25, data=MULTINEWS, seed=1)
    cases.update({f"{REAL_PREFIX}{cluster.id}": cluster for cluster in clusters})
    return cases


def all_cases() -> dict[str, Example]:
    """Every case, by name."""
    return {**TEST_CASES, **synthetic_cases(), **word_soup_cases(), **real_cases()}


def outputs(example: Example) -> dict:
    """What the baselines give for ``example``: each summary by name, and ``lexrank_order``."""
    return {**{name: function(example) for name, function in BASELINE_FUNCTIONS.items()},
            "lexrank_order": lexrank_order(source_sentences(example))}


def record(path: Path = OUTPUTS) -> None:
    """Write every case's :func:`outputs` to ``path`` (the real cases only where ``../shared`` is)."""
    cases = all_cases()
    if not any(name.startswith(REAL_PREFIX) for name in cases):
        raise SystemExit(f"{MULTINEWS} is absent: the real cases would be left out of the record")
    path.write_text(json.dumps({name: outputs(example) for name, example in cases.items()}, indent=1) + "\n",
                    encoding="utf-8")


if __name__ == "__main__":
    record()
