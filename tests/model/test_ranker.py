"""The paragraph ranker network (hiersum.model.ranker): shapes, padding invariance, the titleless query."""

from __future__ import annotations

import pytest
import torch

from hiersum.config import RankerModelConfig
from hiersum.data.ranker_data import RankerExample, collate_ranker
from hiersum.model.ranker import ParagraphRanker

PAD = 0


def tiny_ranker() -> ParagraphRanker:
    torch.manual_seed(0)
    return ParagraphRanker(RankerModelConfig(embedding_dim=8, hidden_size=6, dropout=0.0), vocab_size=30,
                           pad_id=PAD).eval()


EXAMPLES = [RankerExample([5, 6], [[1, 2, 3], [4, 5], [7]], []), RankerExample(None, [[8, 9, 10, 11], [3]], [])]


def test_one_logit_per_paragraph_independent_of_padding_and_batch_neighbours():
    ranker = tiny_ranker()
    batch = collate_ranker(EXAMPLES, pad=PAD)
    logits = ranker(**batch.inputs())
    assert logits.shape == (5,) and torch.isfinite(logits).all()
    alone = [ranker(**collate_ranker([example], pad=PAD).inputs()) for example in EXAMPLES]
    torch.testing.assert_close(logits, torch.cat(alone))  # other examples' longer rows (padding) change nothing
    changed = collate_ranker([RankerExample([5, 6], [[1, 2, 3], [4, 9], [7]], []), EXAMPLES[1]], pad=PAD)
    assert not torch.allclose(ranker(**changed.inputs())[1], logits[1])  # the real tokens do matter


def test_the_titleless_query_is_the_mean_of_the_max_pooled_paragraph_states():
    ranker = tiny_ranker()
    batch = collate_ranker([EXAMPLES[1]], pad=PAD)
    states = ranker._states(ranker.paragraph_lstm, batch.paragraphs, batch.paragraph_lengths)
    pooled = torch.stack([states[i, : int(n)].amax(0) for i, n in enumerate(batch.paragraph_lengths)])
    query = ranker.queries(batch.titles, batch.title_lengths, batch.has_title, pooled, batch.paragraph_example)
    torch.testing.assert_close(query, pooled.mean(0, keepdim=True))
    titled = ranker.queries(torch.tensor([[5, 6]]), torch.tensor([2]), torch.tensor([True]), pooled,
                            batch.paragraph_example)
    assert not torch.allclose(titled, query)  # a title replaces the centroid


def test_the_features_reach_the_score_and_are_required_when_configured():
    torch.manual_seed(0)
    ranker = ParagraphRanker(RankerModelConfig(embedding_dim=8, hidden_size=6, dropout=0.0, features=["length"]),
                             vocab_size=30, pad_id=PAD).eval()
    assert ranker.score.in_features == 12 + 1
    with_features = [RankerExample(e.title, e.paragraphs, [], [[0.5] for _ in e.paragraphs]) for e in EXAMPLES]
    batch = collate_ranker(with_features, pad=PAD)
    logits = ranker(**batch.inputs())
    assert logits.shape == (5,)
    longer = batch.inputs() | {"features": batch.features + 1.0}
    assert not torch.allclose(ranker(**longer), logits)  # the score reads the features
    with pytest.raises(ValueError, match="reads 1 paragraph features"):
        ranker(**collate_ranker(EXAMPLES, pad=PAD).inputs())
    with pytest.raises(ValueError, match="ranker_model.features"):
        RankerModelConfig(features=["length", "colour"])
