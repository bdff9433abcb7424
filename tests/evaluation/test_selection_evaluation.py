"""Evaluation of paragraph selection (hiersum.evaluation.selection, hiersum-evaluate-selection)."""

from __future__ import annotations

import json

import pytest
from rouge_score import rouge_scorer

from hiersum.commands.composed import command_config
from hiersum.commands.evaluate_selection import evaluate_selection_command
from hiersum.config import BootstrapConfig, EvaluateSelectionConfig
from hiersum.data.corpus_splits import read_text_split
from hiersum.data.corpus_tokenizer import prepare_tokenizer
from hiersum.data.paragraphs import paragraphed
from hiersum.data.ranker_data import Rouge2Recall
from hiersum.data.schema import Example
from hiersum.errors import UsageError
from hiersum.evaluation.selection import coverage_recall, evaluate_selection, strategy_orders
from tests.helpers.config import compose_config

EXAMPLES = [
    Example(id="a", title=None, references=["the ferry hit the harbour wall on tuesday"],
            documents=[["markets closed higher", "weather was mild"], ["the ferry hit the harbour wall on tuesday"]]),
    Example(id="b", title="storm", references=["a storm flooded the town", "the town was flooded by a storm"],
            documents=[["cake recipe with lemon"], ["a storm flooded the town overnight", "roads closed"]]),
]


def test_coverage_is_the_rouge_recall_of_the_joined_top_paragraphs_against_the_best_reference():
    orders = strategy_orders(EXAMPLES, "first")
    recalls = coverage_recall(EXAMPLES, orders, budget=2)
    scorer = rouge_scorer.RougeScorer(["rougeL", "rouge2"], use_stemmer=True)
    expected = max(scorer.score(r, "cake recipe with lemon\na storm flooded the town overnight")["rougeL"].recall
                   for r in EXAMPLES[1].references)
    assert recalls["rougeL"][1] == pytest.approx(expected)
    assert recalls["rouge2"][0] == 0.0  # the first two paragraphs of "a" share no bigram with the reference


def test_the_oracle_and_tfidf_beat_document_order_here_and_intervals_bracket_the_mean():
    results = evaluate_selection(EXAMPLES, ["first", "tfidf", "oracle"], [1, 3],
                                 bootstrap=BootstrapConfig(samples=50, seed=1))
    assert results["oracle"][1]["rouge2"].mean == pytest.approx(100 * (1.0 + 1.0) / 2)
    assert results["first"][1]["rouge2"].mean == 0.0
    assert results["oracle"][1]["rougeL"].mean > results["first"][1]["rougeL"].mean
    for strategy in results:  # every paragraph kept: the order no longer matters for ROUGE-2
        assert results[strategy][3]["rouge2"].mean == pytest.approx(results["oracle"][3]["rouge2"].mean)
    coverage = results["tfidf"][1]["rougeL"]
    assert coverage.low <= coverage.mean <= coverage.high
    with pytest.raises(ValueError, match="needs a ranker checkpoint"):
        strategy_orders(EXAMPLES, "ranker")


def test_the_command_writes_json_and_markdown(tiny_corpus, tmp_path, capsys):
    cfg = compose_config("evaluate_selection", [f"data.path={tiny_corpus}", "split=validation",
                                                "strategies=[first,round_robin,tfidf,oracle]", "budgets=[1,3]",
                                                "bootstrap.samples=20", "limit_examples=4"], tmp_path / "run")
    report = evaluate_selection_command(cfg)
    assert report["examples"] == 4
    saved = json.loads((tmp_path / "run" / "selection.json").read_text())
    assert saved["recall"]["oracle"]["1"]["rouge2"]["mean"] >= saved["recall"]["first"]["1"]["rouge2"]["mean"]
    markdown = (tmp_path / "run" / "selection.md").read_text()
    assert "| round_robin |" in markdown and "L'=3" in markdown and markdown in capsys.readouterr().out
    with pytest.raises(UsageError, match="give ranker=PATH"):
        evaluate_selection_command(compose_config("evaluate_selection", [f"data.path={tiny_corpus}"], tmp_path))


def test_under_sentences_every_strategy_and_the_oracle_rank_the_paragraphs_encoding_ranks(
        tiny_corpus, tmp_path, monkeypatch):
    ranked: list[list[list[str]]] = []
    labels = Rouge2Recall.labels

    def recorded(self, example):
        ranked.append(example.documents)
        return labels(self, example)

    monkeypatch.setattr(Rouge2Recall, "labels", recorded)
    overrides = [f"data.path={tiny_corpus}", f"data.cache_dir={tmp_path / 'cache'}", "split=validation",
                 "strategies=[first,oracle]", "budgets=[1]", "bootstrap.samples=0", "limit_examples=3",
                 "data.paragraphs=sentences", "data.max_paragraph_tokens=16", "tokenizer.vocab_size=300"]
    cfg = compose_config("evaluate_selection", overrides, tmp_path / "run")
    evaluate_selection_command(cfg)
    typed = command_config(cfg, EvaluateSelectionConfig, usage="")
    examples, _ = read_text_split(typed.data, "validation")
    tokenizer = prepare_tokenizer(typed.tokenizer, typed.data)  # the one the command trained, found in the cache
    expected = [example.documents for example in paragraphed(examples[:3], tokenizer, typed.data)]
    assert ranked == expected
    assert any(len(document) > 1 for documents in expected for document in documents)
