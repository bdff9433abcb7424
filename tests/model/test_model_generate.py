"""Decoding: output shapes, beam 1 equals greedy, min_length, stopping rules."""

from __future__ import annotations

import pytest
import torch

from hiersum.generate import beam_search, greedy_search, length_penalty
from tests.model.model_testkit import BOS, EOS, make_model


def eos_biased_model(bias: float):
    model = make_model()
    with torch.no_grad():
        model.generator.bias[EOS] += bias
    return model


def greedy(model, src, mask, **kwargs):
    state = model.init_decoder_state(model.encode(src, mask))
    with torch.no_grad():
        return greedy_search(
            model.step, state, batch_size=src.size(0), bos_id=BOS, eos_id=EOS, **kwargs
        )


@pytest.mark.parametrize("stopping", ["official", "full"])
def test_generate_output_structure(model, batch, stopping):
    src, mask, _ = batch
    out = model.generate(src, mask, beam_size=3, max_length=6, stopping=stopping)
    assert len(out.sequences) == len(out.scores) == src.size(0)
    for sequence, score in zip(out.sequences, out.scores, strict=True):
        assert 1 <= len(sequence) <= 6
        assert BOS not in sequence
        assert EOS not in sequence[:-1]
        assert sequence[-1] == EOS or len(sequence) == 6
        assert isinstance(score, float) and score < 0


@pytest.mark.parametrize("bias", [0.0, 3.0])
@pytest.mark.parametrize("alpha", [0.0, 0.7])
def test_beam_size_one_equals_greedy(batch, bias, alpha):
    model = eos_biased_model(bias)
    src, mask, _ = batch
    expected = greedy(model, src, mask, alpha=alpha, max_length=10)
    for stopping in ("official", "full"):
        out = model.generate(src, mask, beam_size=1, alpha=alpha, max_length=10, stopping=stopping)
        assert out.sequences == expected.sequences
        assert out.scores == pytest.approx(expected.scores, abs=1e-4)


def test_greedy_score_is_length_penalised_log_prob(model, batch):
    src, mask, _ = batch
    out = greedy(model, src, mask, alpha=0.5, max_length=5)
    for b, sequence in enumerate(out.sequences):
        tgt_in = torch.tensor([[BOS, *sequence[:-1]]])
        log_probs = model.log_probs(src[b : b + 1], mask[b : b + 1], tgt_in)[0]
        total = log_probs.gather(-1, torch.tensor(sequence).unsqueeze(-1)).sum().item()
        assert out.scores[b] == pytest.approx(total / length_penalty(len(sequence), 0.5), abs=1e-4)


@pytest.mark.parametrize("beam_size", [1, 3])
@pytest.mark.parametrize("stopping", ["official", "full"])
def test_min_length_forbids_early_eos(batch, beam_size, stopping):
    model = eos_biased_model(30.0)  # EOS is by far the most likely token everywhere
    src, mask, _ = batch
    eager = model.generate(src, mask, beam_size=beam_size, max_length=8, stopping=stopping)
    assert eager.sequences == [[EOS]] * src.size(0)
    out = model.generate(
        src, mask, beam_size=beam_size, min_length=4, max_length=8, stopping=stopping
    )
    for sequence in out.sequences:
        assert EOS not in sequence[:4]
        assert sequence[4] == EOS  # and then it ends as soon as it may


def test_max_length_ends_every_hypothesis(batch):
    model = eos_biased_model(-30.0)  # EOS never wins
    src, mask, _ = batch
    for beam_size in (1, 4):
        out = model.generate(src, mask, beam_size=beam_size, max_length=5)
        assert all(len(s) == 5 and EOS not in s for s in out.sequences)


def test_full_search_never_scores_worse_than_greedy_on_average(batch):
    """Sanity check: a wider search should not find worse hypotheses than greedy overall."""
    model = eos_biased_model(2.0)
    src, mask, _ = batch
    greedy_scores = greedy(model, src, mask, max_length=8).scores
    beam = model.generate(src, mask, beam_size=4, max_length=8, stopping="full").scores
    assert sum(beam) >= sum(greedy_scores) - 1e-4


class MarkovStep:
    """A model-free step function: log p(next | last token) from a fixed table [V, V]."""

    def __init__(self, table: torch.Tensor):
        self.table = table

    def __call__(self, tokens, state):
        from hiersum.generate import StepOutput

        return StepOutput(log_probs=self.table[tokens], state=state)


class RowState:
    def reorder(self, indices):
        return self


def test_official_rule_stops_when_top_beam_ends_and_keeps_earlier_hypotheses():
    """Tokens: 0 = BOS, 1 = EOS, 2, 3. From BOS: EOS 0.5, 2 0.3, 3 0.2. The top beam ends at
    the first step ([EOS]), so the official rule stops there; "full" searches on until it has
    K = 2 finished hypotheses."""
    probs = torch.tensor(
        [
            [0.0, 0.5, 0.3, 0.2],  # after BOS
            [0.0, 1.0, 0.0, 0.0],  # after EOS (only reached by non-retired beams)
            [0.0, 0.9, 0.05, 0.05],  # after 2
            [0.0, 0.1, 0.1, 0.8],  # after 3
        ]
    )
    step = MarkovStep(probs.clamp_min(1e-9).log())
    kwargs = dict(batch_size=1, beam_size=2, bos_id=0, eos_id=1, max_length=4)
    official = beam_search(step, RowState(), stopping="official", **kwargs)
    assert official.sequences == [[1]]
    assert official.scores[0] == pytest.approx(torch.tensor(0.5).log().item(), abs=1e-6)
    # With a large alpha length is rewarded: "full" finds [2, EOS] (p 0.27) scored above [EOS]
    # (p 0.5), which the official rule never reaches.
    alpha = 8.0
    assert beam_search(step, RowState(), stopping="official", alpha=alpha, **kwargs).sequences == [
        [1]
    ]
    full = beam_search(step, RowState(), stopping="full", alpha=alpha, **kwargs)
    assert full.sequences == [[2, 1]]
    expected = torch.tensor(0.27).log().item() / length_penalty(2, alpha)
    assert full.scores[0] == pytest.approx(expected, abs=1e-5)


def test_unknown_stopping_rule_is_rejected(model, batch):
    src, mask, _ = batch
    with pytest.raises(ValueError, match="stopping"):
        model.generate(src, mask, stopping="eager")
