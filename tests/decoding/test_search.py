"""The search itself (hiersum.decoding.search) on model-free step functions: the official stopping rule,
length penalty, n-gram blocking."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import pytest
import torch

from hiersum.decoding.search import beam_search, greedy_search, length_penalty
from tests.helpers.model import repeated_ngrams


@dataclass
class TableStepOutput:
    """What a model-free step returns (any object with these fields is a ``StepOutput``; ``attention`` is read only
    with a coverage penalty)."""

    log_probs: torch.Tensor
    state: RowState
    attention: torch.Tensor | None = None


class MarkovStep:
    """A model-free step function: log p(next | last token) from a fixed table [V, V]."""

    def __init__(self, table: torch.Tensor):
        self.table = table

    def __call__(self, tokens, state):
        return TableStepOutput(log_probs=self.table[tokens], state=state)


class RowState:
    """A state with nothing in it: the Markov step needs only the last token."""

    def tile(self, beam_size):
        return self

    def reorder_beams(self, indices):
        return self

    def select_examples(self, examples):
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
    kwargs = dict(batch_size=1, beam_size=2, bos_id=0, eos_id=1, min_length=0, max_length=4)
    official = beam_search(step, RowState(), stopping="official", alpha=0.0, **kwargs)
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



class AttendingStep(MarkovStep):
    """A Markov step whose attention over the source also follows the token fed: ``attention[token]`` [M]."""

    def __init__(self, table: torch.Tensor, attention: torch.Tensor):
        super().__init__(table)
        self.attention_table = attention

    def __call__(self, tokens, state):
        return TableStepOutput(log_probs=self.table[tokens], state=state, attention=self.attention_table[tokens])


@pytest.mark.parametrize("stopping", ["official", "full"])
def test_the_coverage_penalty_charges_attention_beyond_one_and_can_change_the_summary(stopping):
    """Tokens: 0 = BOS, 1 = EOS, 2, 3; two source positions. From BOS: 2 (p 0.6) or 3 (0.4), then EOS. Feeding BOS
    or 2 attends position 0, feeding 3 position 1: [2, EOS] attends position 0 twice (coverage [2, 0], a penalty
    of beta x 1), [3, EOS] each position once (coverage [1, 1], none)."""
    probs = torch.tensor([[0.0, 0.0, 0.6, 0.4], [0.0, 1.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    attention = torch.tensor([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # (V, M) by the token fed
    step = AttendingStep(probs.clamp_min(1e-9).log(), attention)
    kwargs = dict(batch_size=1, beam_size=2, bos_id=0, eos_id=1, alpha=0.0, min_length=0, max_length=3,
                  stopping=stopping)
    assert beam_search(step, RowState(), **kwargs).sequences == [[2, 1]]
    light = beam_search(step, RowState(), coverage_penalty=0.3, **kwargs)
    assert light.sequences == [[2, 1]]  # log 0.6 - 0.3 = -0.81 > log 0.4 = -0.92
    assert light.scores[0] == pytest.approx(torch.tensor(0.6).log().item() - 0.3, abs=1e-5)
    heavy = beam_search(step, RowState(), coverage_penalty=1.0, **kwargs)
    assert heavy.sequences == [[3, 1]]
    assert heavy.scores[0] == pytest.approx(torch.tensor(0.4).log().item(), abs=1e-5)


def test_a_coverage_penalty_without_attention_or_below_zero_is_refused():
    step = MarkovStep(torch.zeros(4, 4))
    kwargs = dict(batch_size=1, beam_size=2, bos_id=0, eos_id=1, alpha=0.0, min_length=0, max_length=3,
                  stopping="full")
    with pytest.raises(ValueError, match="attention over the source"):
        beam_search(step, RowState(), coverage_penalty=1.0, **kwargs)
    with pytest.raises(ValueError, match="coverage_penalty must be >= 0"):
        beam_search(step, RowState(), coverage_penalty=-1.0, **kwargs)


def cycling_step() -> MarkovStep:
    """Tokens: 0 = BOS, 1 = EOS, 2..11. The likeliest path is 2 3 2 3 ... (repeats the bigram 2 3);
    the other tokens leave room for a continuation that repeats nothing."""
    probs = torch.full((12, 12), 0.01)
    probs[:, 0] = 0.0  # BOS is never generated
    probs[0, 2] = probs[2, 3] = probs[3, 2] = 0.8
    probs[1] = torch.nn.functional.one_hot(torch.tensor(1), 12).float()  # EOS only follows EOS
    return MarkovStep((probs / probs.sum(-1, keepdim=True)).clamp_min(1e-9).log())


@pytest.mark.parametrize("beam_size", [1, 3])
@pytest.mark.parametrize("n", [2, 3])
def test_ngram_blocking_never_repeats_an_ngram(beam_size, n):
    kwargs = dict(batch_size=2, beam_size=beam_size, bos_id=0, eos_id=1, alpha=0.0, min_length=12, max_length=12,
                  n_best=1)
    free = beam_search(cycling_step(), RowState(), stopping="full", **kwargs)
    assert all(repeated_ngrams(s, n) for s in free.sequences)  # the unconstrained search repeats
    blocked = beam_search(cycling_step(), RowState(), stopping="full", no_repeat_ngram_size=n, **kwargs)
    for sequence in blocked.sequences:
        assert len(sequence) == 12 and repeated_ngrams(sequence, n) == []


class CountingStep(MarkovStep):
    """A Markov step that records how many rows it decodes at each step."""

    def __init__(self, table: torch.Tensor):
        super().__init__(table)
        self.rows: list[int] = []

    def __call__(self, tokens, state):
        self.rows.append(tokens.size(0))
        return super().__call__(tokens, state)


@pytest.mark.parametrize("beam_size", [1, 3])
@pytest.mark.parametrize("search", ["beam", "greedy"])
def test_an_example_given_up_stops_at_once_and_the_others_decode_as_without_it(beam_size, search):
    """Example 1 is given up before step 4 (a caller's deadline): from then on the step decodes only the rows of
    examples 0 and 2, whose results equal those of a search that never gave anything up."""
    table = cycling_step().table
    kwargs = dict(batch_size=3, bos_id=0, eos_id=1, alpha=0.0, min_length=12, max_length=12)
    if search == "beam":
        run = partial(beam_search, beam_size=beam_size, stopping="full", **kwargs)
    else:
        run = partial(greedy_search, **kwargs)
    rows_per_example = beam_size if search == "beam" else 1
    free = run(CountingStep(table), RowState())
    step = CountingStep(table)
    asked: list[list[int]] = []

    def give_up(examples: list[int]) -> list[bool]:
        asked.append(list(examples))
        return [example == 1 and len(asked) > 4 for example in examples]

    cut = run(step, RowState(), give_up=give_up)
    assert (cut.sequences[1], cut.scores[1], cut.n_best[1]) == ([], float("-inf"), [])
    for example in (0, 2):
        assert (cut.sequences[example], cut.scores[example]) == (free.sequences[example], free.scores[example])
        assert cut.n_best[example] == free.n_best[example]
    assert step.rows == [3 * rows_per_example] * 4 + [2 * rows_per_example] * 8
    assert asked[:5] == [[0, 1, 2]] * 5 and asked[5:] == [[0, 2]] * 7


def test_when_every_example_is_given_up_the_search_stops():
    step = CountingStep(cycling_step().table)
    out = beam_search(step, RowState(), batch_size=2, beam_size=2, bos_id=0, eos_id=1, alpha=0.0, min_length=12,
                      max_length=12, stopping="official", give_up=lambda examples: [True] * len(examples))
    assert step.rows == [] and out.n_best == [[], []] and out.sequences == [[], []]
