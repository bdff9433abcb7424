"""The registry of decoders: one entry per ``model.decoder`` value, as :mod:`hiersum.model.encoder_registry` is
for encoders.

A new decoder is one :func:`register_decoder` call plus a ``conf/model/<name>.yaml`` that sets
``decoder: <name>``. An entry (:class:`DecoderSpec`) gives ``cls``, built as ``cls(config, embeddings=embeddings)``
(the embedding table is shared with the encoder and the output layer), which satisfies
:class:`hiersum.model.decoder_contract.Decoder` (checked when built). ``ModelConfig.decoder`` stays a string:
:func:`decoder_spec` is the one lookup, and refuses an unknown name in one line listing the registered ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from hiersum.config import ModelConfig
from hiersum.model.decoder import TransformerDecoder
from hiersum.model.decoder_contract import check_decoder
from hiersum.registry import Registry

DecoderFactory = Callable[..., nn.Module]
"""``cls(config: ModelConfig, *, embeddings: nn.Embedding) -> nn.Module``, a module satisfying
:class:`~hiersum.model.decoder_contract.Decoder`."""


@dataclass(frozen=True)
class DecoderSpec:
    """What a decoder is (see the module docstring)."""

    cls: DecoderFactory
    """Builds the decoder: ``cls(config, embeddings=embeddings)``."""
    description: str = ""


DECODERS: Registry[DecoderSpec] = Registry("model.decoder", "decoder")
"""Every registered decoder, by name (the value of ``model.decoder``)."""
register_decoder = DECODERS.register
unregister_decoder = DECODERS.unregister


def decoder_spec(name: str) -> DecoderSpec:
    """The entry of decoder ``name`` (one-line ``UsageError`` naming the registered ones if unknown)."""
    return DECODERS.lookup(name, field="model.decoder")


def build_decoder(config: ModelConfig, *, embeddings: nn.Embedding) -> nn.Module:
    """The decoder of ``config``, sharing ``embeddings``; a one-line ``ValueError`` when what the entry builds does
    not satisfy :class:`~hiersum.model.decoder_contract.Decoder` (with ``model.copy_attention``, and its copy part
    :class:`~hiersum.model.decoder_contract.CopySource`)."""
    name = str(config.decoder)
    copy_width = config.d_model if config.copy_attention else None
    return check_decoder(decoder_spec(name).cls(config, embeddings=embeddings), name, copy_width=copy_width)


register_decoder("transformer", DecoderSpec(
    TransformerDecoder, description="the paper's pre-LN transformer decoder over the packed memory, with a cache",
))
