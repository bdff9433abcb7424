"""Shared fixtures: a tiny native-JSONL corpus cut from the embedded sample, and config composition."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_DIR = PROJECT_ROOT / "data" / "sample"
SHARED_DIR = PROJECT_ROOT.parent / "shared"

TINY_OVERRIDES = [
    "model=tiny",
    "tokenizer.vocab_size=300",
    "data.max_paragraphs=6",
    "data.max_paragraph_tokens=24",
    "data.max_target_tokens=32",
    "data.batch_tokens=2048",
    "decode.beam_size=2",
    "decode.max_length=12",
    "decode.min_length=0",
]


@pytest.fixture(autouse=True)
def single_thread():
    """Tiny tensors: one intra-op thread is fastest, and safe from OpenMP stalls under load."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first lines of each sample split (train 40, validation/test 8) in a temp folder."""
    folder = tmp_path_factory.mktemp("tiny_corpus")
    for split, n in (("train", 40), ("validation", 8), ("test", 8)):
        with open(SAMPLE_DIR / f"{split}.jsonl", encoding="utf-8") as source:
            lines = [next(source) for _ in range(n)]
        (folder / f"{split}.jsonl").write_text("".join(lines), encoding="utf-8")
    return folder


@pytest.fixture()
def tiny_corpus_copy(tiny_corpus: Path, tmp_path: Path) -> Path:
    target = tmp_path / "corpus"
    shutil.copytree(tiny_corpus, target)
    return target
