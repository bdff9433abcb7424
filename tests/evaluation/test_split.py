"""Scoring a split's references under the model (``reference_token_scores``) when its examples hold extended ids
(``model.copy_oov``): each batch's mixture is V + K wide, K the batch's own. ``evaluate_split``'s predictions (what
``hiersum train`` writes) carry every reference, as ``hiersum evaluate``'s do."""

from __future__ import annotations

import math

import pytest
import torch

from hiersum.config.decode import DecodeConfig
from hiersum.data.schema import EncodedExample, Example
from hiersum.evaluation.scoring import ScoringConfig
from hiersum.evaluation.split import evaluate_split, reference_token_scores
from hiersum.model import HierSum
from tests.helpers.copy_task import COPY_VOCAB, UNK, copy_task_tokenizer
from tests.helpers.model import BOS, EOS, PAD, tiny_config

V = COPY_VOCAB


def example(name: str, n_oov: int) -> EncodedExample:
    """An example whose source and target hold ``n_oov`` extended ids (V, V + 1, ...)."""
    extended = [V + k for k in range(n_oov)]
    return EncodedExample(id=name, paragraphs=[[10, 11, *extended], [12, 13]], target=[10, *extended], references=[],
                          provenance=[], oov_words=[f"word{k}" for k in range(n_oov)])


def test_examples_with_different_numbers_of_extended_ids_score_as_each_alone_weighted_by_its_tokens(device):
    torch.manual_seed(0)
    model = HierSum(tiny_config(copy_attention=True, copy_oov=True), vocab_size=V, pad_id=PAD, bos_id=BOS,
                    eos_id=EOS, unk_id=UNK).eval().to(device)
    tokenizer = copy_task_tokenizer()
    encoded = [example("none", 0), example("one", 1), example("two", 2)]
    together = reference_token_scores(model, encoded, tokenizer, batch_tokens=1, device=device)  # a batch each
    alone = [reference_token_scores(model, [one], tokenizer, batch_tokens=1, device=device) for one in encoded]
    tokens = [len(one.target) + 1 for one in encoded]  # with EOS
    nll = sum(n * math.log(scores["perplexity"]) for n, scores in zip(tokens, alone, strict=True)) / sum(tokens)
    accuracy = sum(n * scores["token_accuracy"] for n, scores in zip(tokens, alone, strict=True)) / sum(tokens)
    assert together["perplexity"] == pytest.approx(math.exp(nll), rel=1e-5)
    assert together["token_accuracy"] == pytest.approx(accuracy)


def test_the_predictions_of_a_split_hold_every_reference_where_an_example_has_several(device):
    torch.manual_seed(0)
    model = HierSum(tiny_config(copy_attention=True), vocab_size=V, pad_id=PAD, bos_id=BOS, eos_id=EOS,
                    unk_id=UNK).eval().to(device)
    references = [["the one reference"], ["first of three", "second of three", "third of three"]]
    examples = [Example(id=name, title="", documents=[["a b c"]], references=refs)
                for name, refs in zip(("one", "three"), references, strict=True)]
    encoded = [example(name, 0) for name in ("one", "three")]
    evaluated = evaluate_split(model, examples, encoded, copy_task_tokenizer(), DecodeConfig(beam_size=1, max_length=4),
                               split="validation", batch_tokens=64, device=device,
                               scoring=ScoringConfig(baselines=[], bootstrap={"samples": 0}))
    one, three = evaluated.predictions
    assert one.keys() == {"id", "summary", "reference"} and one["reference"] == "the one reference"
    assert three["reference"] == "first of three" and three["references"] == references[1]
    assert [record["id"] for record in evaluated.predictions] == ["one", "three"]
