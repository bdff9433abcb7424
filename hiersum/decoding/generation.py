"""Generation with a network: encode once, then greedy or beam search over its decoder steps.

:func:`generate` is the one entry point; :class:`GenerationOptions` holds the search settings
(:class:`hiersum.config.DecodeConfig` under its Python API name: the command line's type, defaults and checks).
The network is driven through :meth:`HierSum.step`; with ``use_cache=False`` an uncached step
(:class:`PrefixState`, the whole prefix fed again at each step) checks the cache.

Dimensions
    B  batch
    N  rows fed to the decoder at a step
    S  tokens generated so far
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from hiersum.config.decode import DecodeConfig
from hiersum.decoding.search import GenerationOutput, GiveUp, beam_search, greedy_search
from hiersum.errors import UsageError
from hiersum.model.summarizer import HierSum
from hiersum.model.summarizer_state import SummarizerState, SummarizerStep

GenerationOptions = DecodeConfig
"""The search settings of :func:`generate`: :class:`hiersum.config.DecodeConfig` under its Python API name (the same
fields, defaults and checks as the command line's ``decode.*``; ``GenerationOptions.official(**changes)`` is the
official hiersumm search; its ``batch_size`` is not a search setting)."""


@dataclass
class PrefixState:
    """Decoding state without the self-attention cache: the whole prefix is fed again at each step
    (for benchmarks and to check the cache; the memory keys/values are still projected once)."""

    prefix: Tensor
    """[N, S] long, the tokens fed so far."""
    start: SummarizerState
    """The state before any target token (its decoder's keeps no self-attention cache)."""

    def tile(self, beam_size: int) -> PrefixState:
        return PrefixState(self.prefix.repeat_interleave(beam_size, 0), self.start.tile(beam_size))

    def reorder_beams(self, indices: Tensor) -> PrefixState:
        return PrefixState(self.prefix.index_select(0, indices), self.start.reorder_beams(indices))

    def select_examples(self, examples: Tensor) -> PrefixState:
        rows = self.start.rows_of(examples)
        return PrefixState(self.prefix.index_select(0, rows), self.start.select_examples(examples))


@dataclass
class UncachedStep:
    """A step like :meth:`HierSum.step` that runs the decoder over the whole prefix (no cache)."""

    model: HierSum

    def __call__(self, tokens: Tensor, state: PrefixState) -> SummarizerStep:
        prefix = torch.cat([state.prefix, tokens.unsqueeze(1)], 1)  # (N, S+1)
        out = self.model.decoder(prefix, state.start.decoder)  # states (N, S+1, D)
        # with coverage the copy attention reads every earlier position's; without, the last position's alone
        first = 0 if self.model.config.coverage else -1
        log_probs, attention = self.model.next_distribution(out.states[:, first:], prefix[:, first:], state.start)
        return SummarizerStep(log_probs=log_probs[:, -1], state=PrefixState(prefix, state.start),  # (N, V)
                              attention=None if attention is None else attention[:, -1])  # (N, M)


@torch.no_grad()
def generate(
    model: HierSum,
    src: Tensor,
    src_mask: Tensor,
    options: GenerationOptions | None = None,
    *,
    paragraph_graph: Tensor | None = None,
    use_cache: bool = True,
    give_up: GiveUp | None = None,
) -> GenerationOutput:
    """Summaries of a batch (call ``model.eval()`` first to switch dropout off).

    src: long [B, P, T] ([B, L] for a flat model); src_mask: bool, same shape, True = real token;
    options: the search settings (None: :class:`GenerationOptions` defaults); paragraph_graph:
    float [B, P, P], needed when ``model.config.graph`` is not ``none``; ``use_cache=False``
    recomputes the decoder over the whole prefix at every step (``options.compile_step`` is then ignored);
    ``give_up``: which examples to stop searching, asked before each step (:data:`hiersum.decoding.search.GiveUp`).
    """
    options = options or DecodeConfig()
    if options.coverage_penalty and model.copy_attention is None:
        raise UsageError(f"decode.coverage_penalty={options.coverage_penalty} sums the copy attention over the "
                         "steps: it needs a model with model.copy_attention=true")
    max_length, min_length = options.max_length, options.min_length
    if options.max_steps is not None:
        max_length, min_length = min(max_length, options.max_steps), min(min_length, options.max_steps)
    min_lengths: int | list[int] = min_length
    if options.min_length_per_source_token:
        source_tokens = src_mask.flatten(1).sum(-1).double()  # (B,)
        scaled = (min_length + options.min_length_per_source_token * source_tokens).round().clamp(max=max_length)
        min_lengths = scaled.long().tolist()
    encoded = model.encode(src, src_mask, paragraph_graph=paragraph_graph)
    static = use_cache and options.compile_step
    capacity = None if not use_cache else max_length + 1 if static else max_length
    state = model.init_decoder_state(encoded, cache_capacity=capacity)
    del encoded  # the state holds what the search reads; the token states [B, P, T, D] go (as large as the input)
    step = model.step
    if static:
        model.compile_step()
        step = model.static_step
    if not use_cache:
        empty = torch.empty(src.size(0), 0, dtype=torch.long, device=src.device)  # (B, 0)
        state, step = PrefixState(empty, state), UncachedStep(model)
    common = dict(
        batch_size=src.size(0), bos_id=model.bos_id, eos_id=model.eos_id, alpha=options.alpha,
        min_length=min_lengths, max_length=max_length, no_repeat_ngram_size=options.no_repeat_ngram_size,
        device=src.device, give_up=give_up, forbidden_ids=model.forbidden_ids,
    )
    if options.greedy:
        return greedy_search(step, state, **common)
    return beam_search(step, state, beam_size=options.beam_size, stopping=options.stopping, n_best=options.n_best,
                       coverage_penalty=options.coverage_penalty, **common)
