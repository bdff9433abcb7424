"""Training the paragraph ranker (hiersum.training.ranker, hiersum-train-ranker) and its checkpoint
(hiersum.checkpoints.ranker)."""

from __future__ import annotations

import json

import pytest
import torch

import hiersum.commands.train_ranker as train_ranker_command
from hiersum.checkpoints.io import CheckpointError
from hiersum.checkpoints.ranker import RankerScorer, load_ranker, load_ranker_scorer, save_ranker
from hiersum.commands.train_ranker import below_document_order, train_ranker
from hiersum.config import RankerModelConfig
from hiersum.data.ranker_data import RankerExample, Rouge2Recall, collate_ranker
from hiersum.data.selection import SelectionConfig, paragraph_scorer
from hiersum.evaluation.selection import Coverage
from hiersum.model.ranker import ParagraphRanker
from hiersum.training.ranker import RankerModule, top_k_label_sum
from tests.helpers.config import compose_config

PAD = 0


def test_top_k_label_sum_per_example():
    logits = torch.tensor([0.9, 0.1, 0.5, 2.0, -1.0])
    labels = torch.tensor([0.3, 0.2, 0.1, 0.0, 0.4])
    owner = torch.tensor([0, 0, 0, 1, 1])
    assert top_k_label_sum(logits, labels, owner, 2) == pytest.approx([0.4, 0.4])


def test_the_ranker_overfits_a_few_examples():
    torch.manual_seed(0)
    # the label follows the paragraph's content (token 7 = relevant), not its position
    examples = [RankerExample([3, 4], [[7, 7, 2], [5, 6], [1, 7]], [0.9, 0.0, 0.6]),
                RankerExample(None, [[5, 5], [7, 1, 1, 7], [2]], [0.0, 0.8, 0.1]),
                RankerExample([4], [[6], [2, 7], [5, 5, 5]], [0.0, 0.7, 0.0])]
    module = RankerModule(model={"embedding_dim": 16, "hidden_size": 16, "dropout": 0.0}, vocab_size=10,
                          pad_id=PAD, optimizer={"_target_": "torch.optim.Adam", "_partial_": True, "lr": 0.02},
                          top_k=1)
    batch = collate_ranker(examples, pad=PAD)
    optimizer = module.configure_optimizers()
    first = None
    for _ in range(150):
        optimizer.zero_grad()
        loss, logits = module._loss(batch)
        first = first if first is not None else float(loss.detach())
        loss.backward()
        optimizer.step()
    assert float(loss.detach()) < first - 0.1
    torch.testing.assert_close(torch.sigmoid(logits), batch.labels, atol=0.08, rtol=0)
    assert top_k_label_sum(logits, batch.labels, batch.paragraph_example, 1) == pytest.approx([0.9, 0.8, 0.7])


def test_a_ranker_checkpoint_is_self_contained_and_scores_like_the_network(tmp_path, tiny_corpus):
    from hiersum.data.corpus_splits import read_split
    from hiersum.data.tokenizer import train_tokenizer

    examples = read_split(tiny_corpus / "validation.jsonl")[:3]
    tokenizer = train_tokenizer([p for e in examples for d in e.documents for p in d], vocab_size=120)
    torch.manual_seed(0)
    network = ParagraphRanker(RankerModelConfig(embedding_dim=8, hidden_size=8, dropout=0.0),
                              vocab_size=tokenizer.vocab_size, pad_id=tokenizer.special.pad)
    path = save_ranker(tmp_path / "ranker.pt", network, tokenizer, metrics={"val_top_k_recall": 0.5})
    loaded = load_ranker(path)
    assert loaded.metrics == {"val_top_k_recall": 0.5} and loaded.tokenizer.to_str() == tokenizer.to_str()
    expected = RankerScorer(network, tokenizer).score(examples)
    assert [len(s) for s in expected] == [sum(len(d) for d in e.documents) for e in examples]
    by_selection = paragraph_scorer(SelectionConfig(4, 4, 4, selection="ranker", ranker=str(path)))
    for scorer in (load_ranker_scorer(path), by_selection):
        torch.testing.assert_close(torch.tensor(sum(scorer.score(examples), [])), torch.tensor(sum(expected, [])))
    torch.save({"state_dict": {}}, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="not a ranker checkpoint"):
        load_ranker(tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="missing.pt: ranker checkpoint not found"):
        load_ranker_scorer(tmp_path / "missing.pt")


def test_hiersum_train_ranker_writes_a_ranker_checkpoint_that_selection_can_use(tiny_corpus, tmp_path):
    cfg = compose_config("train_ranker", [f"data.path={tiny_corpus}", "ranker_model=tiny", "tokenizer.vocab_size=300",
                                    "trainer.max_epochs=2", "trainer.accelerator=cpu", "batch_examples=4",
                                    "max_train_paragraphs=8"], tmp_path / "run")
    result = train_ranker(cfg)
    path = tmp_path / "run" / "checkpoints" / "ranker-best.pt"
    assert result["checkpoint"] == str(path) and "ranker" in path.name and path.is_file()
    assert 0.0 < result["val_top_k_recall"] and result["train_examples"] == 40
    loaded = load_ranker(path)
    assert loaded.network.config.hidden_size == 16 and loaded.metrics["val_top_k_recall"] == result["val_top_k_recall"]
    assert (tmp_path / "run" / "logs").is_dir()
    # the end-of-run comparison on the validation split: the trained ranker, document order and tf-idf
    report = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert report["checkpoint"] == str(path) and set(report["validation_recall"]) == {"ranker", "first", "tfidf"}
    assert set(report["validation_recall"]["first"]) == {"5", "8", "10", "20", "40"}
    first_8 = report["validation_recall"]["first"]["8"]["rougeL"]["mean"]
    assert 0.0 < first_8 <= 100.0 and report["below_document_order"] == (
        report["validation_recall"]["ranker"]["8"]["rougeL"]["mean"] < first_8)
    table = (tmp_path / "run" / "selection.md").read_text()
    assert "| ranker |" in table and "| first |" in table and "| tfidf |" in table and f"{first_8:.2f}" in table


class LeastRelevantFirst:
    """A ranker that learned the opposite of its target: the paragraphs of lowest ROUGE-2 recall first."""

    def score(self, examples):
        return [[-label for label in Rouge2Recall().labels(example)] for example in examples]


def test_train_ranker_warns_in_one_line_when_its_ranker_is_below_document_order(tiny_corpus, tmp_path, monkeypatch,
                                                                                 capsys):
    monkeypatch.setattr(train_ranker_command, "load_ranker_scorer", lambda path: LeastRelevantFirst())
    cfg = compose_config("train_ranker", [f"data.path={tiny_corpus}", "ranker_model=tiny", "tokenizer.vocab_size=300",
                                    "trainer.max_epochs=1", "trainer.accelerator=cpu", "batch_examples=8",
                                    "max_train_paragraphs=4", "report_budgets=[2]", "top_k=3"], tmp_path / "run")
    result = train_ranker(cfg)
    recall = result["validation_recall"]
    assert set(recall["first"]) == {"2", "3"}  # top_k is always in the table
    assert recall["ranker"]["3"]["rougeL"]["mean"] < recall["first"]["3"]["rougeL"]["mean"]
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "than document order" in warnings[0]
    assert "top 3 paragraphs" in warnings[0] and result["below_document_order"] is True
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["below_document_order"] is True


def _coverage(ranker: float, first: float) -> dict:
    return {name: {8: {"rougeL": Coverage(mean, None, None)}}
            for name, mean in (("ranker", ranker), ("first", first), ("tfidf", 29.3))}


def test_the_warning_compares_rouge_l_recall_at_top_k():
    assert below_document_order(_coverage(30.3, 26.6), 8) is None
    assert below_document_order(_coverage(26.6, 26.6), 8) is None
    warning = below_document_order(_coverage(25.0, 26.6), 8)
    assert warning is not None and "\n" not in warning and "25.00 < 26.60" in warning and "29.30" in warning


def test_the_default_ranker_is_the_features_ranker(tmp_path):
    default = compose_config("train_ranker", [], tmp_path / "a")
    assert list(default.ranker_model.features) == ["length", "tfidf", "position"]
    paper = compose_config("train_ranker", ["ranker_model=paper"], tmp_path / "b")
    assert list(paper.ranker_model.features) == []
    assert default.ranker_model.hidden_size == paper.ranker_model.hidden_size == 128


def test_a_ranker_with_the_position_feature_generalizes_a_label_that_only_position_predicts():
    from hiersum.data.ranker_data import paragraph_features
    from hiersum.data.schema import Example

    # one document of 5 paragraphs of random tokens; the label falls with the paragraph's place, which the
    # words cannot tell (each paragraph is read alone): only the position feature carries it
    positions = paragraph_features(Example(id="x", title="", documents=[["p"] * 5]), ["position"])
    generator = torch.Generator().manual_seed(0)

    def examples(count: int, features: bool) -> list[RankerExample]:
        return [RankerExample(None, [torch.randint(1, 10, (4,), generator=generator).tolist() for _ in range(5)],
                              [0.5, 0.3, 0.2, 0.1, 0.0], positions if features else [])
                for _ in range(count)]

    def top_paragraphs(features: bool) -> list[float]:
        torch.manual_seed(0)
        module = RankerModule(model={"embedding_dim": 8, "hidden_size": 8, "dropout": 0.0,
                                     "features": ["position"] if features else []}, vocab_size=10, pad_id=PAD,
                              optimizer={"_target_": "torch.optim.Adam", "_partial_": True, "lr": 0.02}, top_k=1)
        train, held_out = collate_ranker(examples(6, features), pad=PAD), collate_ranker(examples(6, features), pad=PAD)
        optimizer = module.configure_optimizers()
        for _ in range(60):
            optimizer.zero_grad()
            module._loss(train)[0].backward()
            optimizer.step()
        with torch.no_grad():
            logits = module._loss(held_out)[1]
        return top_k_label_sum(logits, held_out.labels, held_out.paragraph_example, 1)

    assert top_paragraphs(features=True) == pytest.approx([0.5] * 6)  # the first paragraph of every new example
    assert sum(top_paragraphs(features=False)) < 0.5 * 6 - 0.5  # words alone: no better than chance here
