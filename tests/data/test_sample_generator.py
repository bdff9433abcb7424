"""The synthetic sample corpus: reproducible bytes, valid records, a task that needs
several documents (facts scattered, distractors present, no paragraph holds the summary)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hiersum.data import sample_generator
from hiersum.data.sample_generator import (
    DEFAULT_SIZES,
    SPLIT_SEEDS,
    SyntheticExample,
    generate_examples,
    generate_split,
    to_jsonl,
    write_sample_corpus,
)

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample"
SPLITS = list(DEFAULT_SIZES)


def _paragraphs(record: dict) -> list[tuple[int, str]]:
    """(document index, paragraph) pairs of a native record."""
    return [(i, p) for i, doc in enumerate(record["documents"]) for p in doc.split("\n\n")]


def _mentions(paragraph: str, word: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", paragraph) is not None


@pytest.fixture(scope="module")
def records() -> dict[str, list[dict]]:
    """The committed records of each split."""
    return {
        split: [
            json.loads(line) for line in (SAMPLE / f"{split}.jsonl").read_text("utf-8").splitlines()
        ]
        for split in SPLITS
    }


@pytest.fixture(scope="module")
def examples() -> dict[str, list[SyntheticExample]]:
    """The generator's examples (with their facts) for each split."""
    return {
        split: generate_examples(split, n, SPLIT_SEEDS[split]) for split, n in DEFAULT_SIZES.items()
    }


def test_regenerating_gives_the_committed_bytes(tmp_path: Path) -> None:
    paths = write_sample_corpus(tmp_path)
    assert sorted(paths) == sorted(SPLITS)
    for split, path in paths.items():
        committed = SAMPLE / f"{split}.jsonl"
        assert path.read_bytes() == committed.read_bytes(), (
            f"{committed} differs from the generator's output; rebuild it with "
            "`hiersum make-sample --output data/sample`"
        )
    assert not list(tmp_path.glob("*.tmp")), "temporary files were left behind"


def test_generation_does_not_depend_on_hash_seed() -> None:
    code = (
        "import sys; from hiersum.data.sample_generator import generate_split, to_jsonl; "
        "sys.stdout.buffer.write(to_jsonl(generate_split('test', 20, 7)))"
    )
    outputs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        result = subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, check=True
        )
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1] == to_jsonl(generate_split("test", 20, 7))


def test_records_are_valid_native_jsonl(records: dict[str, list[dict]]) -> None:
    ids: list[str] = []
    for split, split_records in records.items():
        assert len(split_records) == DEFAULT_SIZES[split]
        for n, record in enumerate(split_records, start=1):
            where = f"{split}.jsonl line {n}"
            assert list(record) == ["id", "title", "documents", "summary"], where
            assert record["id"] == f"{split}-{n:06d}", where
            assert isinstance(record["title"], str) and record["title"], where
            documents = record["documents"]
            assert isinstance(documents, list) and len(documents) >= 2, where
            for doc in documents:
                assert isinstance(doc, str), where
                assert all(p.strip() == p and p for p in doc.split("\n\n")), where
            assert isinstance(record["summary"], str) and record["summary"], where
            ids.append(record["id"])
    assert len(ids) == len(set(ids))


def test_sizes_match_the_design(records: dict[str, list[dict]]) -> None:
    total_bytes = sum((SAMPLE / f"{split}.jsonl").stat().st_size for split in SPLITS)
    assert total_bytes < 5_500_000
    for record in records["train"]:
        paragraphs = _paragraphs(record)
        assert 2 <= len(record["documents"]) <= 4
        assert 8 <= len(paragraphs) <= 12
        assert all(15 <= len(p.split()) <= 40 for _, p in paragraphs)
        assert 20 <= len(record["summary"].split()) <= 40


def test_records_are_the_examples(
    records: dict[str, list[dict]], examples: dict[str, list[SyntheticExample]]
) -> None:
    for split in SPLITS:
        assert [e.to_record() for e in examples[split]] == records[split]


def test_facts_are_scattered_over_documents(examples: dict[str, list[SyntheticExample]]) -> None:
    for example in (e for split in SPLITS for e in examples[split]):
        record, person = example.to_record(), example.person
        paragraphs = _paragraphs(record)
        about = [(i, p) for i, p in paragraphs if _mentions(p, person.last)]
        fact_docs = set()
        for value in person.values():
            assert _mentions(record["summary"], value), (example.id, value)
            # the nationality may be stated through the country ("a citizen of Veronia")
            forms = (value, person.country) if value == person.nat else (value,)
            holders = [i for i, p in about if any(_mentions(p, form) for form in forms)]
            assert holders, f"{example.id}: {value!r} is stated in no paragraph about {person.name}"
            fact_docs.update(holders)
        assert len(fact_docs) >= 2, f"{example.id}: all facts come from one document"
        distractors = [
            p
            for _, p in paragraphs
            if not _mentions(p, person.last) and not _mentions(p, person.first)
        ]
        assert distractors, f"{example.id}: no paragraph is about something else"


def test_no_paragraph_holds_the_whole_summary(examples: dict[str, list[SyntheticExample]]) -> None:
    for example in (e for split in SPLITS for e in examples[split]):
        values = example.person.values()
        for _, paragraph in _paragraphs(example.to_record()):
            found = sum(_mentions(paragraph, value) for value in values)
            assert found <= len(values) // 2, f"{example.id}: {paragraph!r}"


def test_the_first_paragraph_is_often_a_distractor(records: dict[str, list[dict]]) -> None:
    firsts = [_paragraphs(r)[0][1] for r in records["train"]]
    titles = [r["title"] for r in records["train"]]
    about = sum(_mentions(p, title.split()[-1]) for p, title in zip(firsts, titles, strict=True))
    assert 0.2 < about / len(firsts) < 0.7


def test_lead_baseline_is_weak(records: dict[str, list[dict]]) -> None:
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    scores = []
    for record in records["test"]:
        n_words = len(record["summary"].split())
        lead = " ".join(" ".join(p for _, p in _paragraphs(record)).split()[:n_words])
        scores.append(scorer.score(record["summary"], lead)["rougeL"].fmeasure)
    assert sum(scores) / len(scores) < 0.30


def test_splits_do_not_share_titles(records: dict[str, list[dict]]) -> None:
    titles = {
        split: {r["title"] for r in split_records} for split, split_records in records.items()
    }
    for i, first in enumerate(SPLITS):
        for second in SPLITS[i + 1 :]:
            assert len(titles[first] & titles[second]) <= 3, (first, second)


def test_different_seeds_give_different_examples() -> None:
    assert generate_split("x", 5, 1) != generate_split("x", 5, 2)
    assert generate_split("x", 5, 1) == generate_split("x", 5, 1)


def test_cli_writes_requested_sizes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hiersum.cli.make_sample import main  # ``hiersum make-sample``

    main(["--output", str(tmp_path), "--train", "4", "--validation", "2", "--test", "0"])
    assert "train: 4 examples" in capsys.readouterr().out
    train = (tmp_path / "train.jsonl").read_bytes()
    assert train == to_jsonl(generate_split("train", 4, SPLIT_SEEDS["train"]))
    assert (SAMPLE / "train.jsonl").read_bytes().startswith(train)
    assert (tmp_path / "test.jsonl").read_bytes() == b""


def test_unknown_split_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown split"):
        write_sample_corpus(tmp_path, sizes={"dev": 3})


def test_pools_are_fixed() -> None:
    pools = sample_generator.build_pools()
    assert pools == sample_generator.POOLS
    assert len({nat for _, nat in pools.countries}) == len(pools.countries)
    assert all(len(values) == len(set(values)) for values in (pools.cities, pools.awards))
