"""Model-agnostic decoding: greedy search and batched beam search over a ``step`` interface.

Dimensions
    B  batch (examples)
    K  beams per example
    N  rows fed to the model at a step (B, or remaining examples x K)
    V  vocabulary

The search knows nothing about the model. It calls ``step(tokens, state)`` with the last
token of every live row (``tokens`` long [N]) and gets back a :class:`StepOutput` with
next-token log-probabilities [N, V] and the new state. The state only has to implement
``reorder(indices)`` (rows ``indices`` of the state, repeats allowed), which the search uses
to tile examples into beams, follow beam origins and drop finished examples.

Scores are GNMT length-penalised: cumulative log-prob / ((5 + length) / 6) ** alpha, where
length counts generated tokens (EOS included, BOS not).

Stopping rules of :func:`beam_search`:

``"official"`` (default; the rule of the official hiersumm / OpenNMT fast beam search)
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

With K = 1 both rules equal :func:`greedy_search`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import torch
from torch import Tensor

STOPPING_RULES = ("official", "full")


class SearchState(Protocol):
    """What the search needs from a decoder state."""

    def reorder(self, indices: Tensor) -> SearchState:
        """The state of rows ``indices`` (long [N']) of this one."""
        ...


StateT = TypeVar("StateT", bound=SearchState)


@dataclass
class StepOutput(Generic[StateT]):
    """One decoding step of every live row."""

    log_probs: Tensor
    """[N, V] log p(next token | prefix, source)."""
    state: StateT
    """The state after consuming the fed tokens."""


StepFn = Callable[[Tensor, StateT], StepOutput[StateT]]


@dataclass
class GenerationOutput:
    """Best hypothesis of every example, in input order."""

    sequences: list[list[int]]
    """Token ids without BOS, ending with EOS when one was produced."""
    scores: list[float]
    """Length-penalised score of each sequence."""


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty ((5 + length) / 6) ** alpha."""
    return ((5.0 + length) / 6.0) ** alpha


def _cut_after_eos(tokens: list[int], eos_id: int) -> list[int]:
    return tokens[: tokens.index(eos_id) + 1] if eos_id in tokens else tokens


def _check_lengths(min_length: int, max_length: int) -> None:
    if max_length < 1 or min_length < 0:
        raise ValueError(
            f"need max_length >= 1 and min_length >= 0; found {max_length}, {min_length}"
        )


def greedy_search(
    step: StepFn,
    state: SearchState,
    *,
    batch_size: int,
    bos_id: int,
    eos_id: int,
    min_length: int = 0,
    max_length: int = 100,
    alpha: float = 0.0,
    device: torch.device | str | None = None,
) -> GenerationOutput:
    """Pick the most likely token at every step; a row stops at EOS or after ``max_length`` tokens.

    ``state`` holds ``batch_size`` rows. EOS is forbidden while fewer than ``min_length`` tokens
    were generated. Scores are length-penalised with ``alpha`` like :func:`beam_search`.
    """
    _check_lengths(min_length, max_length)
    rows = torch.arange(batch_size, device=device)  # example of each live row
    tokens = torch.full((batch_size,), bos_id, dtype=torch.long, device=device)
    cumulative = torch.zeros(batch_size, device=device)
    prefixes: list[list[int]] = [[] for _ in range(batch_size)]
    sequences: list[list[int]] = [[] for _ in range(batch_size)]
    scores = [0.0] * batch_size
    for t in range(max_length):
        out = step(tokens, state)
        log_probs = out.log_probs.float()  # (N, V)
        if t < min_length:
            log_probs[:, eos_id] = float("-inf")
        best, tokens = log_probs.max(-1)  # (N,), (N,)
        cumulative = cumulative + best
        finished = tokens.eq(eos_id) | (t + 1 == max_length)  # (N,)
        rows_and_tokens = zip(rows.tolist(), tokens.tolist(), finished.tolist(), strict=True)
        for i, (example, token, ends) in enumerate(rows_and_tokens):
            prefixes[example].append(token)
            if ends:
                sequences[example] = prefixes[example]
                scores[example] = float(cumulative[i]) / length_penalty(t + 1, alpha)
        keep = (~finished).nonzero().view(-1)  # (N',)
        if keep.numel() == 0:
            break
        rows, tokens, cumulative = rows[keep], tokens[keep], cumulative[keep]
        state = out.state.reorder(keep)
    return GenerationOutput(sequences=sequences, scores=scores)


def beam_search(
    step: StepFn,
    state: SearchState,
    *,
    batch_size: int,
    beam_size: int,
    bos_id: int,
    eos_id: int,
    alpha: float = 0.0,
    min_length: int = 0,
    max_length: int = 100,
    stopping: str = "official",
    device: torch.device | str | None = None,
) -> GenerationOutput:
    """Batched beam search over B examples x K beams (see the module docstring for ``stopping``).

    ``state`` holds ``batch_size`` rows (one per example); it is tiled to B x K rows here.
    EOS is forbidden while fewer than ``min_length`` tokens were generated; a hypothesis has at
    most ``max_length`` tokens.
    """
    if stopping not in STOPPING_RULES:
        raise ValueError(f"stopping must be one of {STOPPING_RULES}, found {stopping!r}")
    _check_lengths(min_length, max_length)
    B, K = batch_size, beam_size
    state = state.reorder(torch.arange(B, device=device).repeat_interleave(K))  # B*K rows
    examples = list(range(B))  # original index of each live example
    alive = torch.full((B * K, 1), bos_id, dtype=torch.long, device=device)  # (N, 1 + t)
    # Only the first beam of an example is live at the start.
    cumulative = torch.tensor([0.0] + [float("-inf")] * (K - 1), device=device).repeat(B)  # (N,)
    hypotheses: list[list[tuple[float, list[int]]]] = [[] for _ in range(B)]
    best: list[tuple[float, list[int]] | None] = [None] * B
    for t in range(max_length):
        out = step(alive[:, -1], state)
        log_probs = out.log_probs.float()  # (N, V)
        V = log_probs.size(-1)
        if t < min_length:
            log_probs[:, eos_id] = float("-inf")
        penalty = length_penalty(t + 1, alpha)
        candidates = ((log_probs + cumulative.unsqueeze(1)) / penalty).view(-1, K * V)  # (b, K*V)
        top_scores, top_ids = candidates.topk(K, dim=-1)  # (b, K)
        cumulative = (top_scores * penalty).view(-1)  # (b*K,)
        first_row = torch.arange(top_ids.size(0), device=top_ids.device).unsqueeze(1) * K  # (b, 1)
        origin = first_row + top_ids // V  # (b, K) row of alive each new beam extends
        new_tokens = top_ids % V  # (b, K)
        alive = torch.cat([alive[origin.view(-1)], new_tokens.view(-1, 1)], -1)  # (b*K, t + 2)
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
        )  # (b,) bool
        if all(done):
            break
        live = [i for i, d in enumerate(done) if not d]
        live_rows = torch.tensor([i * K + k for i in live for k in range(K)], device=alive.device)
        examples = [examples[i] for i in live]
        alive, cumulative = alive[live_rows], cumulative[live_rows]
        state = out.state.reorder(origin.view(-1)[live_rows])
    assert all(b is not None for b in best)
    return GenerationOutput(
        sequences=[_cut_after_eos(b[1], eos_id) for b in best],  # type: ignore[index]
        scores=[b[0] for b in best],  # type: ignore[index]
    )


def _record(
    hypotheses: list[list[tuple[float, list[int]]]],
    best: list[tuple[float, list[int]] | None],
    examples: list[int],
    beams: Tensor,
    scores: Tensor,
    ended: Tensor,
    *,
    stopping: str,
    beam_size: int,
    last_step: bool,
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
            # First maximum in recording order, like a stable sort by decreasing score.
            best[example] = max(hypotheses[example], key=lambda h: h[0])
        done.append(stop)
    return done
