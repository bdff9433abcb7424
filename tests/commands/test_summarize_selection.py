"""``hiersum-summarize`` with a trained paragraph ranker: ``selection=ranker ranker=PATH`` on the command
line, or inherited from a checkpoint trained with ``data.selection=ranker`` (in process)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from hiersum.checkpoints.ranker import load_ranker_scorer, save_ranker
from hiersum.commands.summarize import summarize
from hiersum.config import RankerModelConfig
from hiersum.data.schema import Example
from hiersum.data.selection import ranked_order
from hiersum.data.tokenizer import train_tokenizer
from hiersum.model.ranker import ParagraphRanker
from tests.helpers.paths import SAMPLE_DIR

pytestmark = pytest.mark.slow
KEPT = 3


@pytest.fixture()
def records() -> list[dict]:
    with open(SAMPLE_DIR / "test.jsonl", encoding="utf-8") as handle:
        return [json.loads(next(handle)) for _ in range(4)]


@pytest.fixture()
def ranker(records, tmp_path) -> Path:
    texts = [p for r in records for d in r["documents"] for p in d.split("\n\n")]
    tokenizer = train_tokenizer(texts, vocab_size=120)
    torch.manual_seed(0)
    network = ParagraphRanker(RankerModelConfig(embedding_dim=8, hidden_size=8, features=["length", "tfidf"]),
                              vocab_size=tokenizer.vocab_size, pad_id=tokenizer.special.pad)
    return save_ranker(tmp_path / "ranker-best.pt", network, tokenizer)


def kept_paragraphs(output: Path) -> list[list[tuple[int, int]]]:
    """Per record, the (document, paragraph) of the source paragraphs the model read (attention over all)."""
    return [[(e["document"], e["paragraph"]) for e in json.loads(line)["top_paragraphs"] if e["document"] >= 0]
            for line in output.read_text(encoding="utf-8").splitlines()]


def ranker_top(records: list[dict], ranker: Path, count: int) -> list[set[tuple[int, int]]]:
    examples = [Example(id=r["id"], title=r.get("title"), references=[],
                        documents=[d.split("\n\n") for d in r["documents"]]) for r in records]
    scores = load_ranker_scorer(ranker).score(examples)
    return [set(ranked_order(e.documents, s)[:count]) for e, s in zip(examples, scores, strict=True)]


def run(tiny_cfg, tmp_path: Path, checkpoint: Path, source: Path, name: str, *extra: str) -> Path:
    output = tmp_path / f"{name}.jsonl"
    summarize(tiny_cfg(f"checkpoint={checkpoint}", f"input={source}", f"output={output}", "decode=greedy",
                       "decode.max_length=4", "attention=true", f"attention_top_k={KEPT + 1}", *extra,
                       name="summarize", output_dir=tmp_path / f"hydra-{name}"))
    return output


def test_selection_ranker_reads_the_rankers_top_paragraphs(records, ranker, tiny_cfg, checkpoint, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    by_ranker = kept_paragraphs(run(tiny_cfg, tmp_path, checkpoint, source, "ranker", "selection=ranker",
                                    f"ranker={ranker}", f"max_paragraphs={KEPT}"))
    expected = ranker_top(records, ranker, len(by_ranker[0]))
    assert [set(kept) for kept in by_ranker] == expected and 0 < len(by_ranker[0]) <= KEPT
    by_order = kept_paragraphs(run(tiny_cfg, tmp_path, checkpoint, source, "first", "selection=first",
                                   f"max_paragraphs={KEPT}"))
    assert by_order != by_ranker  # the ranker chose other paragraphs than document order

    # a checkpoint trained with data.selection=ranker: summarize (as evaluate) inherits its ranker
    trained = torch.load(checkpoint, map_location="cpu", weights_only=True)
    trained["hyper_parameters"]["data"] |= {"selection": "ranker", "ranker": str(ranker),
                                            "max_paragraphs": KEPT, "eval_max_paragraphs": None}
    torch.save(trained, tmp_path / "ranked.ckpt")
    inherited = kept_paragraphs(run(tiny_cfg, tmp_path, tmp_path / "ranked.ckpt", source, "inherited"))
    assert inherited == by_ranker
