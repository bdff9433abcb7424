"""What :class:`hiersum.model.summarizer.HierSum` asks of an encoder: the :class:`Encoder` protocol, its output
(:class:`EncoderOutput`), and the optional capabilities an encoder declares by having their methods
(:class:`PretrainedWeights`), as torchtune's ``AdapterModule`` declares ``adapter_params()``.

Dimensions
    B  batch
    P  paragraphs per example
    T  tokens per paragraph
    L  source length of an encoder that reads the joined paragraphs (``SourceLayout.FLAT``): src is [B, L]
    D  model width
    H  pooling heads of an inter-paragraph layer
    M  memory length: the most real tokens of any example in the batch (at least 1)

Masks are boolean with True = real token; every tensor is batch-first. An empty paragraph (all padding) may
sit anywhere in the grid and must change nothing at real positions.

The registry (:mod:`hiersum.model.encoder_registry`) builds an encoder as ``cls(config, embeddings=embeddings)``
and refuses one that does not satisfy :class:`Encoder`; ``HierSum`` never probes an encoder for other attributes.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from torch import Tensor, nn

from hiersum.data.packing import PackedGrid


@dataclass
class EncoderOutput:
    """What the encoder hands to the decoder (and to analysis code)."""

    token_states: Tensor
    """[B, P, T, D] final LayerNorm output ([B, L, D] flat); padding positions hold meaningless values."""
    memory: Tensor
    """[B, M, D] the real tokens of each example packed paragraph after paragraph, zero-padded (a flat encoder
    may give its [B, L, D] states with padding zeroed, M = L)."""
    memory_mask: Tensor
    """[B, M] bool, True = real token."""
    memory_ids: Tensor | None = None
    """[B, M] long, the token id of each memory position (meaningless at padding): what copying a position emits
    (``model.copy_attention``). None: the encoder does not give them, and a model with copy attention refuses it."""
    pooling_weights: list[Tensor] | None = None
    """Per inter layer, [B, P, H, T] pooling weights; None unless ``return_attention`` (or no inter layer)."""
    inter_attention: list[Tensor] | None = None
    """Per inter layer, [B, H, P, P] paragraph-to-paragraph attention; None unless ``return_attention``."""


@runtime_checkable
class Encoder(Protocol):
    """The contract of every encoder (an ``nn.Module``).

    ``forward(src, src_mask, *, paragraph_graph=None, return_attention=False, layout=None) -> EncoderOutput``:

    - ``src``: long [B, P, T] token ids, or [B, L] for an encoder of ``SourceLayout.FLAT``;
    - ``src_mask``: bool, the shape of ``src``, True = real token (padding may also sit inside a paragraph);
    - ``paragraph_graph``: float [B, P, P] (``model.graph``), None without a graph; an encoder without
      inter-paragraph layers ignores it;
    - ``return_attention``: also give ``pooling_weights`` and ``inter_attention`` (an encoder without
      inter-paragraph layers gives None);
    - ``layout``: the :class:`~hiersum.data.packing.PackedGrid` of ``src_mask``, made once per batch by ``collate``
      (``Batch.layout``) or None; an encoder may use it instead of making its own, or ignore it.

    A wrong shape raises a one-line ``ValueError`` giving the expected and the found shapes.

    Check an encoder with :func:`check_encoder`, not ``isinstance(encoder, Encoder)``: from Python 3.12 that
    looks ``layers`` up statically and misses a ``ModuleList`` registered in ``__init__`` (it lives in
    ``nn.Module._modules``), so it is False for every encoder there.
    """

    layers: nn.ModuleList
    """The encoder's repeated blocks, each compiled on its own by :meth:`HierSum.compile` (may be empty)."""

    def forward(
        self, src: Tensor, src_mask: Tensor, *, paragraph_graph: Tensor | None = None, return_attention: bool = False,
        layout: PackedGrid | None = None,
    ) -> EncoderOutput:
        """Encode a batch of sources (see the class docstring)."""
        ...


@runtime_checkable
class PretrainedWeights(Protocol):
    """An optional capability: the encoder brings weights trained elsewhere (``model.encoder=pretrained``).

    :meth:`HierSum.reset_parameters` leaves :meth:`pretrained_parameters` as loaded, then calls
    :meth:`initialise_decoder_embeddings`; ``optim.pretrained_group`` gives the pretrained parameters their own
    optimizer group. An encoder without these methods trains every parameter from a random start.
    """

    def pretrained_parameters(self) -> list[nn.Parameter]:
        """The parameters that come from the pretrained model (not re-initialised)."""
        ...

    def initialise_decoder_embeddings(self, embeddings: nn.Embedding) -> None:
        """Set the decoder's embedding table [V, D] after the random initialisation, or leave it (the encoder's
        options say which)."""
        ...


@runtime_checkable
class EncoderCountsFlops(Protocol):
    """An optional capability: the encoder counts the FLOPs of its forward pass on the real tokens, which
    :mod:`hiersum.model.flops` adds up for throughput and MFU (an encoder without it is not counted). An encoder
    that has it keeps one memory position per real source token (the decoder's share is counted on them)."""

    def forward_flops(self, src_mask: Tensor) -> int:
        """The forward FLOPs (2 a multiply-add, matrix products and attention only) on the real tokens of
        ``src_mask`` bool [B, P, T]."""
        ...


def check_encoder(encoder: object, name: str) -> nn.Module:
    """``encoder`` if it satisfies :class:`Encoder` (its ``forward`` takes every keyword of the contract); else a
    one-line ``ValueError`` saying what it lacks."""
    expected = ("an nn.Module with forward(src, src_mask, *, paragraph_graph, return_attention, layout) -> "
                "EncoderOutput and a 'layers' ModuleList (hiersum.model.encoder_contract.Encoder)")
    if not isinstance(encoder, nn.Module):
        raise ValueError(f"model.encoder={name} built a {type(encoder).__name__}; expected {expected}")
    # every nn.Module has a forward: what may lack is 'layers'. Not isinstance(encoder, Encoder): from Python 3.12
    # that reads attributes statically (inspect.getattr_static), and a ModuleList assigned in __init__ lives in
    # nn.Module._modules, which only nn.Module.__getattr__ finds, so every encoder would be refused.
    if not isinstance(getattr(encoder, "layers", None), nn.ModuleList):
        raise ValueError(f"model.encoder={name} built a {type(encoder).__name__} without 'layers' (an empty "
                         f"nn.ModuleList() if it has no repeated block); expected {expected}")
    parameters = inspect.signature(encoder.forward).parameters
    missing = [keyword for keyword in CONTRACT_KEYWORDS if keyword not in parameters]
    if missing and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        raise ValueError(f"model.encoder={name}: {type(encoder).__name__}.forward lacks the keyword argument(s) "
                         f"{', '.join(missing)}; expected {expected}")
    return encoder


CONTRACT_KEYWORDS = ("paragraph_graph", "return_attention", "layout")
"""The keyword arguments :class:`Encoder`'s ``forward`` takes (``HierSum.encode`` passes all three)."""
