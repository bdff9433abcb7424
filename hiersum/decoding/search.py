"""Model-agnostic decoding: greedy search and batched beam search over a ``step`` interface.

Dimensions
    B  batch (examples)
    K  beams per example
    N  rows fed to the model at a step (B, or remaining examples x K)
    V  vocabulary

The search knows nothing about the model. It calls ``step(tokens, state)`` with the last
token of every live row (``tokens`` long [N]) and gets back a :class:`StepOutput` with
next-token log-probabilities [N, V] and the new state. The state implements
:class:`SearchState`: ``tile`` (each example becomes K consecutive beam rows),
``reorder_beams`` (follow beam origins, always within an example) and ``select_examples``
(drop finished examples). Keeping those apart lets a state share per-example data (the
decoder's memory keys/values) between beams without copying it at every step.

Constraints applied to the log-probabilities before choosing: EOS is forbidden while fewer than
``min_length`` tokens were generated (one length for every example, or one each); with
``no_repeat_ngram_size`` n > 0, a token that would complete an n-gram already present in the
hypothesis is forbidden (trigram blocking of PreSumm / fairseq's ``NGramRepeatBlock`` with n = 3).

Scores are GNMT length-penalised: cumulative log-prob / ((5 + length) / 6) ** alpha, where
length counts generated tokens (EOS included, BOS not). With ``coverage_penalty`` beta > 0 a beam's score also
loses beta * sum_i max(0, c_i - 1), c_i the attention source position i has received over the beam's steps (the
step's :attr:`StepOutput.attention`): OpenNMT-py's ``summary`` coverage penalty, applied at every step
(``-stepwise_penalty``), as Gehrmann et al. (2018) decode CNN/DailyMail. Attending again to what a beam already
attended to costs it; repeating and re-copying the same source words does.

Stopping rules of :func:`beam_search` (:class:`hiersum.config.Stopping`; the search settings have no defaults
here: those of :class:`hiersum.config.DecodeConfig` are the only ones, ``full`` among them):

``"official"`` (the rule of the official hiersumm / OpenNMT fast beam search)
    An example stops at the first step where its best-scoring live beam emits EOS. Each beam
    that emits EOS is recorded as a hypothesis with its score at that length, but it is not
    retired: it stays in the beam and keeps being expanded (so a later hypothesis can contain
    an earlier EOS; returned sequences are cut after their first EOS). When the example stops,
    all its current beams are recorded too, and the best recorded hypothesis wins (ties: the
    one recorded first). At ``max_length`` every live beam is recorded.

``"full"``
    A beam that emits EOS is recorded and retired (its slot is refilled by the next best
    continuation of the other beams). An example stops once K hypotheses are recorded, or at
    ``max_length`` (then its live beams are recorded as well); the best recorded one wins.
    This explores longer hypotheses than ``"official"`` and never returns one with an
    internal EOS.

With K = 1 both rules equal :func:`greedy_search`. ``n_best`` returns the best distinct
hypotheses recorded for each example, best first (with ``"official"``, beams recorded when the
example stops may not have ended).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import torch
from torch import Tensor

from hiersum.config.choices import Stopping


class SearchState(Protocol):
    """What the search needs from a decoder state (rows of an example are consecutive)."""

    def tile(self, beam_size: int) -> SearchState:
        """Every row repeated ``beam_size`` times, consecutively."""
        ...

    def reorder_beams(self, indices: Tensor) -> SearchState:
        """Rows ``indices`` (long [N]); ``indices[r]`` is a row of the same example as r."""
        ...

    def select_examples(self, examples: Tensor) -> SearchState:
        """Only the rows of the live examples at positions ``examples`` (long [b'])."""
        ...


StateT = TypeVar("StateT", bound=SearchState)
StateT_co = TypeVar("StateT_co", bound=SearchState, covariant=True)


class StepOutput(Protocol[StateT_co]):
    """What a step returns for every live row (:class:`hiersum.model.summarizer_state.SummarizerStep` is one)."""

    @property
    def log_probs(self) -> Tensor:
        """[N, V] log p(next token | prefix, source)."""
        ...

    @property
    def state(self) -> StateT_co:
        """The state after consuming the fed tokens."""
        ...

    @property
    def attention(self) -> Tensor | None:
        """[N, M] this step's attention over the M source positions (a distribution per row; zeros at padding), or
        None: what :func:`beam_search`'s ``coverage_penalty`` sums over the steps."""
        ...


StepFn = Callable[[Tensor, StateT], StepOutput[StateT]]


@dataclass
class Hypothesis:
    """One finished (or cut) hypothesis."""

    tokens: list[int]
    """Token ids without BOS, ending with EOS when one was produced."""
    score: float
    """Length-penalised cumulative log-probability."""


@dataclass
class GenerationOutput:
    """Best hypothesis of every example, in input order."""

    sequences: list[list[int]]
    """Token ids without BOS, ending with EOS when one was produced."""
    scores: list[float]
    """Length-penalised score of each sequence."""
    n_best: list[list[Hypothesis]] = field(default_factory=list)
    """Per example, up to ``n_best`` distinct hypotheses, best first (the first is the sequence)."""


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty ((5 + length) / 6) ** alpha."""
    return ((5.0 + length) / 6.0) ** alpha


def _cut_after_eos(tokens: list[int], eos_id: int) -> list[int]:
    return tokens[: tokens.index(eos_id) + 1] if eos_id in tokens else tokens


MinLength = int | Sequence[int]
"""EOS forbidden before this many generated tokens: one length for every example, or one per example."""


def _check_lengths(min_length: MinLength, max_length: int, no_repeat_ngram_size: int, batch_size: int) -> None:
    lengths = [min_length] if isinstance(min_length, int) else list(min_length)
    if max_length < 1 or min(lengths, default=0) < 0:
        raise ValueError(
            f"need max_length >= 1 and min_length >= 0; found {max_length}, {min_length}"
        )
    if not isinstance(min_length, int) and len(lengths) != batch_size:
        raise ValueError(f"need one min_length per example ({batch_size}), found {len(lengths)}")
    if no_repeat_ngram_size < 0:
        raise ValueError(f"no_repeat_ngram_size must be >= 0, found {no_repeat_ngram_size}")


def block_repeated_ngrams(log_probs: Tensor, generated: Tensor, n: int) -> None:
    """Forbid, in place, every token that would repeat an n-gram of its row.

    log_probs: [N, V]; generated: long [N, t], the tokens generated so far (BOS excluded).
    """
    t = generated.size(1)
    if n < 1 or t < n:
        return
    windows = generated.unfold(1, n, 1)  # (N, t-n+1, n) every n-gram so far
    last = generated[:, t - n + 1 :]  # (N, n-1) the prefix a new token would complete
    match = windows[:, :, :-1].eq(last.unsqueeze(1)).all(-1)  # (N, t-n+1)
    rows, starts = match.nonzero(as_tuple=True)
    log_probs[rows, windows[rows, starts, -1]] = float("-inf")


def summary_coverage_penalty(coverage: Tensor, beta: float) -> Tensor:
    """OpenNMT-py's ``summary`` coverage penalty: beta * sum_i max(0, c_i - 1) [N] of ``coverage`` [N, M], the
    attention each source position has received so far (positions never attended, padding among them, cost 0)."""
    return beta * (coverage - 1.0).clamp(min=0.0).sum(-1)


def _row_min_lengths(min_length: MinLength, examples: list[int], beam_size: int, t: int,
                     device: torch.device) -> int | Tensor:
    """``min_length`` for the live rows at step ``t``: the one length, or long [N] (each live example's, once per
    beam); 0 once ``t`` has passed every live example's minimum (no tensor made at the steps after it)."""
    if isinstance(min_length, int):
        return min_length
    lengths = [min_length[e] for e in examples]
    if t >= max(lengths, default=0):
        return 0
    return torch.tensor(lengths, device=device).repeat_interleave(beam_size)


def _constrain(
    log_probs: Tensor, alive: Tensor, *, t: int, eos_id: int, min_length: int | Tensor, no_repeat_ngram_size: int,
    forbidden_ids: Sequence[int],
) -> None:
    """Apply the forbidden tokens, min_length (one, or long [N] a row) and n-gram blocking in place; alive:
    [N, 1 + t] (BOS first)."""
    if forbidden_ids:
        log_probs[:, list(forbidden_ids)] = float("-inf")
    if isinstance(min_length, Tensor):
        log_probs[:, eos_id].masked_fill_(min_length > t, float("-inf"))
    elif t < min_length:
        log_probs[:, eos_id] = float("-inf")
    if no_repeat_ngram_size:
        block_repeated_ngrams(log_probs, alive[:, 1:], no_repeat_ngram_size)


def greedy_search(
    step: StepFn,
    state: SearchState,
    *,
    batch_size: int,
    bos_id: int,
    eos_id: int,
    min_length: MinLength,
    max_length: int,
    alpha: float,
    no_repeat_ngram_size: int = 0,
    forbidden_ids: Sequence[int] = (),
    device: torch.device | str | None = None,
    give_up: GiveUp | None = None,
) -> GenerationOutput:
    """Pick the most likely token at every step; a row stops at EOS or after ``max_length`` tokens.

    ``state`` holds ``batch_size`` rows. EOS is forbidden while fewer than ``min_length`` tokens
    were generated; ``forbidden_ids`` (the model's padding and BOS) are never generated. Scores are
    length-penalised with ``alpha`` like :func:`beam_search`. ``give_up``:
    see :data:`GiveUp` (an example given up has no hypothesis).
    """
    _check_lengths(min_length, max_length, no_repeat_ngram_size, batch_size)
    examples = list(range(batch_size))  # original index of each live row
    alive = torch.full((batch_size, 1), bos_id, dtype=torch.long, device=device)  # (N, 1 + t)
    cumulative = torch.zeros(batch_size, device=device)  # (N,)
    sequences: list[list[int]] = [[] for _ in range(batch_size)]
    scores = [0.0] * batch_size
    given_up: set[int] = set()
    for t in range(max_length):
        keep = _kept(give_up, examples, given_up)
        if keep is not None:
            if not keep:
                break
            rows = torch.tensor(keep, device=alive.device)  # (N',)
            examples = [examples[i] for i in keep]
            alive, cumulative = alive[rows], cumulative[rows]
            state = state.select_examples(rows)
        out = step(alive[:, -1], state)
        log_probs = out.log_probs.float()  # (N, V)
        _constrain(log_probs, alive, t=t, eos_id=eos_id,
                   min_length=_row_min_lengths(min_length, examples, 1, t, alive.device),
                   no_repeat_ngram_size=no_repeat_ngram_size, forbidden_ids=forbidden_ids)
        best, tokens = log_probs.max(-1)  # (N,), (N,)
        cumulative = cumulative + best
        alive = torch.cat([alive, tokens.unsqueeze(1)], 1)  # (N, 2 + t)
        state = out.state
        finished = tokens.eq(eos_id) | (t + 1 == max_length)  # (N,)
        if not bool(finished.any()):
            continue
        penalty = length_penalty(t + 1, alpha)
        for i in finished.nonzero().view(-1).tolist():
            sequences[examples[i]] = alive[i, 1:].tolist()
            scores[examples[i]] = float(cumulative[i]) / penalty
        keep = (~finished).nonzero().view(-1)  # (N',)
        if keep.numel() == 0:
            break
        examples = [examples[i] for i in keep.tolist()]
        alive, cumulative = alive[keep], cumulative[keep]
        state = state.select_examples(keep)
    n_best = [[] if i in given_up else [Hypothesis(s, c)]
              for i, (s, c) in enumerate(zip(sequences, scores, strict=True))]
    scores = [float("-inf") if i in given_up else score for i, score in enumerate(scores)]
    return GenerationOutput(sequences=sequences, scores=scores, n_best=n_best)


def beam_search(
    step: StepFn,
    state: SearchState,
    *,
    batch_size: int,
    beam_size: int,
    bos_id: int,
    eos_id: int,
    alpha: float,
    min_length: MinLength,
    max_length: int,
    stopping: str,
    no_repeat_ngram_size: int = 0,
    forbidden_ids: Sequence[int] = (),
    n_best: int = 1,
    coverage_penalty: float = 0.0,
    device: torch.device | str | None = None,
    give_up: GiveUp | None = None,
) -> GenerationOutput:
    """Batched beam search over B examples x K beams (see the module docstring for ``stopping``).

    ``state`` holds ``batch_size`` rows (one per example); it is tiled to B x K rows here.
    EOS is forbidden while fewer than ``min_length`` tokens were generated; ``forbidden_ids`` (the model's padding
    and BOS) are never generated; a hypothesis has at most ``max_length`` tokens. ``n_best`` (<= K) hypotheses are
    returned per example. ``coverage_penalty``: beta of the summary coverage penalty (module docstring; 0: none),
    which needs the step's :attr:`StepOutput.attention`. ``give_up``: see :data:`GiveUp` (an example given up has
    no hypothesis).
    """
    stopping = Stopping.coerce(stopping, "stopping")
    _check_lengths(min_length, max_length, no_repeat_ngram_size, batch_size)
    if not 1 <= n_best <= beam_size:
        raise ValueError(f"n_best must be in [1, beam_size={beam_size}], found {n_best}")
    if coverage_penalty < 0:
        raise ValueError(f"coverage_penalty must be >= 0, found {coverage_penalty}")
    B, K = batch_size, beam_size
    state = state.tile(K)  # B*K rows
    examples = list(range(B))  # original index of each live example
    alive = torch.full((B * K, 1), bos_id, dtype=torch.long, device=device)  # (N, 1 + t)
    # Only the first beam of an example is live at the start.
    cumulative = torch.tensor([0.0] + [float("-inf")] * (K - 1), device=device).repeat(B)  # (N,)
    hypotheses: list[list[tuple[float, list[int]]]] = [[] for _ in range(B)]
    best: list[list[Hypothesis]] = [[] for _ in range(B)]
    given_up: set[int] = set()
    coverage: Tensor | None = None  # (N, M) with coverage_penalty: the attention each row's beam gave so far

    def select(live: list[int]) -> None:
        """Keep the live examples at positions ``live`` (with their K beams each)."""
        nonlocal examples, alive, cumulative, state, coverage
        kept = torch.tensor(live, device=alive.device)  # (b',)
        rows = (kept.unsqueeze(1) * K + torch.arange(K, device=alive.device)).view(-1)  # (b'*K,)
        examples = [examples[i] for i in live]
        alive, cumulative = alive[rows], cumulative[rows]
        coverage = None if coverage is None else coverage[rows]
        state = state.select_examples(kept)

    for t in range(max_length):
        keep = _kept(give_up, examples, given_up)
        if keep is not None:
            if not keep:
                break
            select(keep)
        out = step(alive[:, -1], state)
        log_probs = out.log_probs.float()  # (N, V)
        V = log_probs.size(-1)
        _constrain(log_probs, alive, t=t, eos_id=eos_id,
                   min_length=_row_min_lengths(min_length, examples, K, t, alive.device),
                   no_repeat_ngram_size=no_repeat_ngram_size, forbidden_ids=forbidden_ids)
        penalty = length_penalty(t + 1, alpha)
        # An example's K best continuations are among the k best tokens of each of its beams.
        k = min(K, V)
        row_scores, row_tokens = log_probs.topk(k, dim=-1)  # (N, k)
        candidates = (row_scores + cumulative.unsqueeze(1)) / penalty  # (N, k)
        if coverage_penalty:
            # this step's attention is the row's whatever token follows: one penalty a row
            coverage = _add_attention(coverage, out.attention)  # (N, M)
            row_penalty = summary_coverage_penalty(coverage, coverage_penalty)  # (N,)
            candidates = candidates - row_penalty.unsqueeze(1)
        top_scores, top_ids = candidates.view(-1, K * k).topk(K, dim=-1)  # (b, K)
        first_row = torch.arange(top_ids.size(0), device=top_ids.device).unsqueeze(1) * K  # (b, 1)
        origin = (first_row + top_ids // k).view(-1)  # (b*K,) row of alive each new beam extends
        if coverage is None:
            cumulative = (top_scores * penalty).view(-1)  # (b*K,)
        else:  # the log-probability alone carries on; the penalty is the coverage's, recomputed at each step
            cumulative = (top_scores.view(-1) + row_penalty[origin]) * penalty  # (b*K,)
            coverage = coverage[origin]
        new_tokens = row_tokens.view(-1, K * k).gather(1, top_ids)  # (b, K)
        alive = torch.cat([alive[origin], new_tokens.view(-1, 1)], -1)  # (b*K, t + 2)
        ended = new_tokens.eq(eos_id)  # (b, K)
        if stopping == "full":
            cumulative = cumulative.masked_fill(ended.view(-1), float("-inf"))
        done = _record(
            hypotheses,
            best,
            examples,
            alive.view(-1, K, alive.size(-1)),
            top_scores,
            ended,
            stopping=stopping,
            beam_size=K,
            last_step=t + 1 == max_length,
            eos_id=eos_id,
            n_best=n_best,
        )  # (b,) bool
        if all(done):
            break
        state = out.state.reorder_beams(origin)
        if not any(done):
            continue
        select([i for i, d in enumerate(done) if not d])
    assert all(hypotheses or i in given_up for i, hypotheses in enumerate(best))
    return GenerationOutput(
        sequences=[b[0].tokens if b else [] for b in best],
        scores=[b[0].score if b else float("-inf") for b in best],
        n_best=best,
    )


def _add_attention(coverage: Tensor | None, attention: Tensor | None) -> Tensor:
    """``coverage`` [N, M] (None before the first step) plus a step's ``attention`` [N, M], in fp32."""
    if attention is None:
        raise ValueError("coverage_penalty needs the step's attention over the source (StepOutput.attention): "
                         "a model with copy attention (model.copy_attention=true)")
    attention = attention.float()
    return attention if coverage is None else coverage + attention


GiveUp = Callable[[list[int]], list[bool]]
"""A search's ``give_up``: called before each step with the (original) indices of the examples still
searched, it answers which of them to stop searching now (a caller's deadline). An example given up
has no hypothesis: an empty sequence, score -inf, and an empty ``n_best``."""


def _kept(give_up: GiveUp | None, examples: list[int], given_up: set[int]) -> list[int] | None:
    """Positions among ``examples`` to search on (the others are added to ``given_up``), or None for all."""
    if give_up is None:
        return None
    flags = give_up(examples)
    if not any(flags):
        return None
    given_up.update(example for example, flag in zip(examples, flags, strict=True) if flag)
    return [i for i, flag in enumerate(flags) if not flag]


def _record(
    hypotheses: list[list[tuple[float, list[int]]]],
    best: list[list[Hypothesis]],
    examples: list[int],
    beams: Tensor,
    scores: Tensor,
    ended: Tensor,
    *,
    stopping: str,
    beam_size: int,
    last_step: bool,
    eos_id: int,
    n_best: int,
) -> list[bool]:
    """Record finished hypotheses of each live example; return which examples are done.

    beams: [b, K, 1 + t] token ids (BOS first); scores: [b, K] length-penalised; ended: [b, K].
    """
    if not last_step and not bool(ended.any()):
        return [False] * len(examples)
    ended_rows = ended.tolist()
    beam_rows, score_rows = beams[:, :, 1:].tolist(), scores.tolist()
    done = []
    for i, example in enumerate(examples):
        if stopping == "official":
            stop = last_step or ended_rows[i][0]
            keep = [True] * beam_size if stop else ended_rows[i]
        else:
            n_ended = sum(ended_rows[i]) + len(hypotheses[example])
            stop = last_step or n_ended >= beam_size
            keep = [True] * beam_size if last_step else ended_rows[i]
        for k in range(beam_size):
            if keep[k]:
                hypotheses[example].append((score_rows[i][k], beam_rows[i][k]))
        if stop:
            best[example] = _best_distinct(hypotheses[example], eos_id=eos_id, n=n_best)
        done.append(stop)
    return done


def _best_distinct(recorded: list[tuple[float, list[int]]], *, eos_id: int, n: int) -> list[Hypothesis]:
    """The n best distinct hypotheses (cut after EOS), best first; ties: first recorded first."""
    chosen: list[Hypothesis] = []
    seen: set[tuple[int, ...]] = set()
    for score, tokens in sorted(recorded, key=lambda h: -h[0]):  # stable: recording order on ties
        tokens = _cut_after_eos(tokens, eos_id)
        if tuple(tokens) not in seen:
            seen.add(tuple(tokens))
            chosen.append(Hypothesis(tokens, score))
        if len(chosen) == n:
            break
    return chosen
