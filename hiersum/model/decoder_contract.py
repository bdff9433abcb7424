"""What :class:`hiersum.model.summarizer.HierSum` asks of a decoder: the :class:`Decoder` protocol, as
:mod:`hiersum.model.encoder_contract` says what it asks of an encoder.

Dimensions
    N  rows (examples, or examples x beams while decoding)
    L  new target tokens fed in this call (all of them when teacher forcing, 1 per step)
    M  memory length (the encoder's ``EncoderOutput.memory``)
    D  model width

Masks are boolean with True = real token; every tensor is batch-first. The decoder's state is a
:class:`hiersum.model.cache.DecoderState`: the search reorders, selects and grows it without knowing the
decoder (its ``memory`` and ``self_attn`` hold what the decoder put there; ``length`` counts the consumed
target tokens), inside the model's :class:`hiersum.model.summarizer_state.SummarizerState`, which keeps what the
model adds (the copy memory and the coverage) beside it. The registry (:mod:`hiersum.model.decoder_registry`)
builds a decoder as ``cls(config, embeddings=embeddings)`` and refuses one that does not satisfy :class:`Decoder`,
or, with ``model.copy_attention``, one without the copy part (:class:`CopySource`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from torch import Tensor, nn

from hiersum.model.cache import DecoderState


@dataclass
class DecoderOutput:
    """What a decoder's ``forward`` returns."""

    states: Tensor
    """[N, L, D] the final states of the L new tokens (what the output layer reads)."""
    state: DecoderState
    """The state after consuming them."""


@runtime_checkable
class Decoder(Protocol):
    """The contract of every decoder (an ``nn.Module``).

    - ``init_state(memory, memory_mask, *, cache_capacity=0) -> DecoderState``: the state before any target
      token; memory float [N, M, D], memory_mask bool [N, M]; ``cache_capacity`` target positions to preallocate
      (the cache grows when a call needs more), None: no cache (a whole target fed in one call);
    - ``forward(tokens, state) -> DecoderOutput``: consume ``tokens`` long [N, L] at positions S..S+L-1
      (S = ``state.length``); the output's ``states`` [N, L, D] go to the tied output layer;
    - ``static_forward(tokens, state, position) -> Tensor``: one token per row, tokens [N, 1] at ``position``
      (long [1]) over the fixed-size cache of ``state``, written in place; the states [N, 1, D]. Reads no Python
      number that changes from step to step (one compiled graph serves every step of
      :meth:`HierSum.static_step`);
    - ``embeddings``: the token table [V, D] it embeds with (shared with the encoder and the output layer);
    - ``layers``: an ``nn.ModuleList`` of its repeated blocks, each compiled on its own by :meth:`HierSum.compile`.

    With ``model.copy_attention``, also the copy part, :class:`CopySource`.

    Optional capability (a method): ``forward_flops(memory_lengths, tgt_mask) -> int``, the FLOPs of its forward
    pass on the real tokens (memory_lengths long [B], real memory positions of each example; tgt_mask bool
    [B, S]); :mod:`hiersum.model.flops` counts a model whose encoder and decoder both have it.
    """

    embeddings: nn.Embedding
    layers: nn.ModuleList

    def init_state(self, memory: Tensor, memory_mask: Tensor, *, cache_capacity: int | None = 0) -> DecoderState:
        """The state before any target token (see the class docstring)."""
        ...

    def forward(self, tokens: Tensor, state: DecoderState) -> DecoderOutput:
        """Consume ``tokens`` [N, L] (see the class docstring)."""
        ...

    def static_forward(self, tokens: Tensor, state: DecoderState, position: Tensor) -> Tensor:
        """One token per row at ``position`` over a fixed-size cache (see the class docstring)."""
        ...


@runtime_checkable
class CopySource(Protocol):
    """The copy part of the contract: what the copy attention (``model.copy_attention``,
    :class:`hiersum.model.copy_attention.CopyAttention`) and its coverage (``model.coverage``) read of a decoder,
    checked by :func:`check_decoder` when the model copies.

    - ``d_model``: D, the width of the states ``forward`` and ``static_forward`` give: s_t, the copy attention's query
      (and the switch's first input), which must be ``model.d_model``, the copy attention's width;
    - ``embeddings``, D wide: x_t = ``embeddings(token fed at t)``, the switch's third input;
    - the states of a call are those of its tokens, in the order fed ([N, L, D], position S + l at l): the coverage
      adds up the attention of the positions in that order;
    - the rows of its state (a :class:`hiersum.model.cache.DecoderState`): N = B' x G, row r reading memory entry
      r // G (``group_size``, ``entries_of``, ``rows_of``), moved by ``tile``, ``reorder_beams``,
      ``select_examples`` and ``reorder``. The copy memory (one entry per example) and the coverage (one vector per
      row) are the model's, not the decoder's: :class:`hiersum.model.summarizer_state.SummarizerState` holds them
      beside the decoder's state and moves them as it moves its rows.
    """

    d_model: int
    embeddings: nn.Embedding


@runtime_checkable
class DecoderCountsFlops(Protocol):
    """An optional capability: the decoder counts the FLOPs of its forward pass on the real tokens
    (:mod:`hiersum.model.flops`; a decoder without it is not counted)."""

    def forward_flops(self, memory_lengths: Tensor, tgt_mask: Tensor) -> int:
        """The forward FLOPs (2 a multiply-add, matrix products and attention only): ``memory_lengths`` long [B]
        real memory positions of each example, ``tgt_mask`` bool [B, S]."""
        ...


CONTRACT_METHODS = ("init_state", "forward", "static_forward")
"""The methods :class:`Decoder` has (``HierSum`` calls each)."""


def check_decoder(decoder: object, name: str, *, copy_width: int | None = None) -> nn.Module:
    """``decoder`` if it satisfies :class:`Decoder` (and, with ``copy_width``, the copy part :class:`CopySource` of
    that width: ``model.d_model`` of a model with ``model.copy_attention``); else a one-line ``ValueError`` saying what
    it lacks. Not ``isinstance(decoder, Decoder)``: from Python 3.12 that reads attributes statically and misses the
    ``layers`` and ``embeddings`` a module registers in ``__init__`` (see
    :func:`hiersum.model.encoder_contract.check_encoder`)."""
    expected = ("an nn.Module with init_state(memory, memory_mask, *, cache_capacity), forward(tokens, state), "
                "static_forward(tokens, state, position), 'embeddings' and a 'layers' ModuleList "
                "(hiersum.model.decoder_contract.Decoder)")
    if not isinstance(decoder, nn.Module):
        raise ValueError(f"model.decoder={name} built a {type(decoder).__name__}; expected {expected}")
    lacking = [method for method in CONTRACT_METHODS if not callable(getattr(decoder, method, None))]
    if not isinstance(getattr(decoder, "layers", None), nn.ModuleList):
        lacking.append("layers")
    if not isinstance(getattr(decoder, "embeddings", None), nn.Embedding):
        lacking.append("embeddings")
    if lacking:
        raise ValueError(f"model.decoder={name} built a {type(decoder).__name__} without {', '.join(lacking)}; "
                         f"expected {expected}")
    if copy_width is not None:
        check_copy_source(decoder, name, copy_width)
    return decoder


def check_copy_source(decoder: nn.Module, name: str, width: int) -> None:
    """A one-line ``ValueError`` unless ``decoder`` (a :class:`Decoder`) has the copy part :class:`CopySource` of
    width ``width``: ``d_model`` and an ``embeddings`` table both ``width`` wide."""
    expected = (f"model.copy_attention=true reads the copy part of the decoder contract: 'd_model' = model.d_model="
                f"{width} (the width of its states, the copy attention's query) and 'embeddings' {width} wide (the "
                f"fed tokens' embeddings, the switch's input) (hiersum.model.decoder_contract.CopySource)")
    built = f"model.decoder={name} built a {type(decoder).__name__}"
    d_model = getattr(decoder, "d_model", None)
    if not isinstance(d_model, int):
        raise ValueError(f"{built} without d_model; {expected}")
    embedding_width = getattr(getattr(decoder, "embeddings", None), "embedding_dim", None)
    if (d_model, embedding_width) != (width, width):
        raise ValueError(f"{built} with d_model {d_model} and embeddings {embedding_width} wide; {expected}")
