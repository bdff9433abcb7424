"""``hiersum-rank``: ranked native JSONL in input order with provenance, malformed records, resuming,
a trained ranker's checkpoint, exit statuses 2 and 3 (subprocesses)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from hiersum.checkpoints.ranker import save_ranker
from hiersum.commands.rank import rank
from hiersum.config import RankerModelConfig
from hiersum.data.corpus_splits import read_split
from hiersum.data.tokenizer import train_tokenizer
from hiersum.errors import UsageError
from hiersum.model.ranker import ParagraphRanker
from tests.helpers.cli import assert_usage_error, cli_env
from tests.helpers.config import compose_config
from tests.helpers.paths import PROJECT_ROOT


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def run_rank(tmp_path: Path, *args: str):
    return rank(compose_config("rank", list(args), tmp_path / "hydra"))


@pytest.fixture()
def source(tiny_corpus: Path, tmp_path: Path) -> Path:
    lines = (tiny_corpus / "test.jsonl").read_text().splitlines()[:4]
    lines.insert(2, '{"id": "broken", "documents": 7}')
    return write_lines(tmp_path / "in.jsonl", lines)


def test_tfidf_ranking_writes_the_top_paragraphs_in_input_order_with_provenance(source, tiny_corpus, tmp_path,
                                                                                 capsys):
    output = tmp_path / "out.jsonl"
    result = run_rank(tmp_path, "ranker=tfidf", f"input={source}", f"output={output}", "top_k=3")
    assert (result.written, result.already_done, result.errors) == (4, 0, 1)
    assert f"{source}:3: field 'documents'" in capsys.readouterr().err
    assert [(e["line"], e["field"]) for e in read_jsonl(tmp_path / "out.errors.jsonl")] == [(3, "documents")]
    examples = read_split(tiny_corpus / "test.jsonl")[:4]
    records = read_jsonl(output)
    assert [r["id"] for r in records] == [e.id for e in examples]
    for record, example in zip(records, examples, strict=True):
        assert set(record) == {"id", "title", "summary", "documents", "ranking"}
        assert record["title"] == example.title and record["summary"] == example.references[0]
        (kept,) = record["documents"]
        assert len(kept) == len(record["ranking"]) == min(3, sum(len(d) for d in example.documents))
        assert kept == [example.documents[r["document"]][r["paragraph"]] for r in record["ranking"]]
        scores = [r["score"] for r in record["ranking"]]
        assert scores == sorted(scores, reverse=True)
    # the output is native JSONL: it reads back as examples with one document
    assert [e.documents[0] for e in read_split(output)] == [r["documents"][0] for r in records]


def test_a_rerun_completes_a_cut_output_with_every_id_once(source, tmp_path):
    output = tmp_path / "out.jsonl"
    run_rank(tmp_path, "ranker=tfidf", f"input={source}", f"output={output}", "top_k=2")
    complete = output.read_text()
    lines = complete.splitlines(keepends=True)
    output.write_text("".join(lines[:2]) + lines[2][:10])  # killed while writing the third record
    result = run_rank(tmp_path, "ranker=tfidf", f"input={source}", f"output={output}", "top_k=2")
    assert (result.written, result.already_done) == (2, 2) and output.read_text() == complete


def test_a_ranker_checkpoint_ranks_by_its_scores(source, tiny_corpus, tmp_path):
    texts = [p for e in read_split(tiny_corpus / "train.jsonl") for d in e.documents for p in d]
    tokenizer = train_tokenizer(texts, vocab_size=200)
    torch.manual_seed(0)
    network = ParagraphRanker(RankerModelConfig(embedding_dim=8, hidden_size=8), vocab_size=tokenizer.vocab_size,
                              pad_id=tokenizer.special.pad)
    checkpoint = save_ranker(tmp_path / "ranker.pt", network, tokenizer)
    output = tmp_path / "out.jsonl"
    result = run_rank(tmp_path, f"ranker={checkpoint}", f"input={source}", f"output={output}", "top_k=40",
                      "batch_examples=3")
    assert result.written == 4
    for record in read_jsonl(output):
        scores = [r["score"] for r in record["ranking"]]
        assert scores == sorted(scores, reverse=True) and all(0 < s < 1 for s in scores)
        assert len({(r["document"], r["paragraph"]) for r in record["ranking"]}) == len(scores)  # all, once each
    with pytest.raises(UsageError, match="ranker checkpoint not found"):
        run_rank(tmp_path, f"ranker={tmp_path / 'none.pt'}", f"input={source}", f"output={output}")


@pytest.mark.slow
def test_exit_statuses_of_the_command(source, tmp_path):
    def command(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "hiersum", "rank", *args, f"hydra.run.dir={tmp_path / 'h'}"],
                              cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300, env=cli_env())

    result = command("ranker=tfidf", f"input={source}", f"output={tmp_path / 'out.jsonl'}", "top_k=2")
    assert result.returncode == 3, result.stderr
    assert len(read_jsonl(tmp_path / "out.jsonl")) == 4
    result = command(f"ranker={tmp_path / 'missing.pt'}", f"input={source}", f"output={tmp_path / 'o.jsonl'}")
    assert_usage_error(result.returncode, result.stderr, "hiersum rank: error:", "ranker checkpoint not found")
