"""``hiersum-train data.selection=tfidf|ranker`` (in process, fast_dev_run): the prepared examples hold the
paragraphs in the scorer's order."""

from __future__ import annotations

import pytest
import torch

from hiersum.checkpoints.ranker import load_ranker_scorer, save_ranker
from hiersum.commands.train import train
from hiersum.config import RankerModelConfig
from hiersum.data.corpus_splits import read_split
from hiersum.data.prepared import PreparedSplit
from hiersum.data.selection import TfidfScorer, select_paragraphs
from hiersum.data.tokenizer import train_tokenizer
from hiersum.model.ranker import ParagraphRanker
from tests.helpers.config import tiny_train_config

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("rule", ["tfidf", "ranker"])
def test_training_reads_the_paragraphs_in_the_scorers_order(rule, tiny_corpus, tmp_path, device):
    examples = read_split(tiny_corpus / "train.jsonl")
    options = [f"data.selection={rule}", "data.title_paragraph=false"]
    if rule == "ranker":
        tokenizer = train_tokenizer([p for e in examples for d in e.documents for p in d], vocab_size=150)
        torch.manual_seed(0)
        network = ParagraphRanker(RankerModelConfig(embedding_dim=8, hidden_size=8),
                                  vocab_size=tokenizer.vocab_size, pad_id=tokenizer.special.pad)
        checkpoint = save_ranker(tmp_path / "ranker.pt", network, tokenizer)
        options.append(f"data.ranker={checkpoint}")
        scorer = load_ranker_scorer(checkpoint)
    else:
        scorer = TfidfScorer()
    cache = tmp_path / "prepared"
    cfg = tiny_train_config(tiny_corpus, tmp_path / "run", device, f"data.cache_dir={cache}", "debug=fast_dev_run",
                            "callbacks=none", *options)
    metrics = train(cfg)
    assert metrics["test"]["model"]["perplexity"] > 1.0
    (folder,) = [f for f in cache.glob("*-train-*") if f.is_dir() and ".tmp" not in f.name]
    prepared = PreparedSplit(folder)
    expected = select_paragraphs(examples, rule, scorer)
    kept = cfg.data.max_paragraphs
    assert [prepared[i].provenance for i in range(len(prepared))] == [order[:kept] for order in expected]
    assert any(order[:kept] != sorted(order[:kept]) for order in expected)  # not document order
