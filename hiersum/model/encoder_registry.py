"""The registry of encoders: one entry per ``model.encoder`` value.

A new encoder is one :func:`register_encoder` call plus one ``conf/model/<name>.yaml``
(``encoder: <name>``). An entry (:class:`EncoderSpec`) declares what the rest of the code asks
about an encoder:

- ``cls``: the module, built as ``cls(config, embeddings=embeddings)`` (the embedding table is
  shared with the decoder), which satisfies :class:`hiersum.model.encoder_contract.Encoder` (``forward(src,
  src_mask, *, paragraph_graph, return_attention, layout) -> EncoderOutput`` and its ``layers``; checked when
  built) and may declare the optional capability :class:`~hiersum.model.encoder_contract.PretrainedWeights`;
- ``source_layout``: the source it reads, the [B, P, T] grid or [B, L]
  (:class:`hiersum.data.batching.SourceLayout`; the data layer batches by it without knowing encoders);
- ``inter_paragraph``: whether it has inter-paragraph layers, so pooling weights and paragraph
  attention to inspect, and accepts ``model.inter_layers``, ``model.graph`` and ``model.pooling_penalty``;
- ``official_hier``: its counterpart in the official hiersumm code (``-hier true`` / ``false``), None
  when there is none (:mod:`hiersum.checkpoints.official` maps the rest from it);
- ``resolve_config``: completes a config from what it names (the pretrained encoder: its Hugging Face config and
  width read from ``model.pretrained_encoder``), so that the completed config alone, saved in a checkpoint,
  rebuilds the network (:func:`resolve_model_config`); None when a config is complete as given;
- ``tokenizer_path``: the tokenizer the encoder comes with (the pretrained encoder's directory), which a run
  uses when ``tokenizer.path`` is null (:func:`encoder_tokenizer_path`); None: a tokenizer is trained.

``ModelConfig.encoder`` stays a string: :func:`encoder_spec` is the one lookup, and refuses an unknown
name in one line listing the registered ones. :func:`validate_choices` checks the registered choices
of a composed config (``model.encoder`` and ``data.format``); the entry points call it first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from torch import nn

from hiersum.config import ModelConfig, TokenizerConfig
from hiersum.data.batching import FlatLayout, SourceLayout, flat_layout
from hiersum.data.formats.registry import validate_format
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.errors import UsageError
from hiersum.model.decoder_registry import decoder_spec
from hiersum.model.encoder import FlatEncoder, HierarchicalEncoder
from hiersum.model.encoder_contract import check_encoder
from hiersum.model.pretrained import PretrainedEncoder, resolve_pretrained_config
from hiersum.registry import Registry

EncoderFactory = Callable[..., nn.Module]
"""``cls(config: ModelConfig, *, embeddings: nn.Embedding) -> nn.Module``, a module satisfying
:class:`~hiersum.model.encoder_contract.Encoder`."""


@dataclass(frozen=True)
class EncoderSpec:
    """What an encoder is (see the module docstring)."""

    cls: EncoderFactory
    """Builds the encoder: ``cls(config, embeddings=embeddings)``."""
    source_layout: SourceLayout = SourceLayout.GRID
    """The source tensor it reads: [B, P, T] (GRID) or the joined paragraphs [B, L] (FLAT)."""
    inter_paragraph: bool = False
    """Has inter-paragraph layers (pooling, paragraph attention, graphs, pooling penalty)."""
    official_hier: bool | None = None
    """The official hiersumm ``-hier`` flag of the same architecture; None: no official counterpart."""
    description: str = ""
    resolve_config: Callable[[ModelConfig], ModelConfig] | None = None
    """Completes a config from what it names (e.g. a pretrained directory); None: complete as given."""
    tokenizer_path: Callable[[ModelConfig], str | None] | None = None
    """The tokenizer (a local file or directory) the encoder of a config comes with; None: none."""
    shared_embeddings: bool = True
    """Embeds the source with the model's shared table (what ``model.copy_oov``'s extended ids are read through)."""


ENCODERS: Registry[EncoderSpec] = Registry("model.encoder", "encoder")
"""Every registered encoder, by name (the value of ``model.encoder``)."""
register_encoder = ENCODERS.register
unregister_encoder = ENCODERS.unregister


def encoder_spec(name: str, *, field_name: str = "model.encoder") -> EncoderSpec:
    """The entry of encoder ``name`` (one-line ``ValueError`` naming the registered ones if unknown)."""
    return ENCODERS.lookup(name, field=field_name)


def validate_encoder(config: ModelConfig) -> EncoderSpec:
    """Check ``config.encoder`` against the registry and the options that need inter-paragraph layers."""
    spec = encoder_spec(str(config.encoder))
    graph = str(config.graph)
    if not spec.inter_paragraph and (list(config.inter_layers) or graph != "none" or config.pooling_penalty):
        raise ValueError(
            f"model.encoder={config.encoder} has no inter-paragraph layers: set model.inter_layers=[], "
            f"model.graph=none and model.pooling_penalty=0 (found {list(config.inter_layers)}, {graph!r}, "
            f"{config.pooling_penalty})"
        )
    if config.copy_oov and not spec.shared_embeddings:
        names = ", ".join(name for name, entry in ENCODERS.items() if entry.shared_embeddings)
        raise ValueError(f"model.copy_oov=true needs an encoder that embeds with the shared table ({names}), found "
                         f"model.encoder={config.encoder}")
    return spec


def resolve_model_config(config: ModelConfig) -> ModelConfig:
    """``config`` completed by its encoder's ``resolve_config`` (unchanged for most encoders): what
    :class:`hiersum.model.summarizer.HierSum` builds and checkpoints record."""
    resolve = encoder_spec(str(config.encoder)).resolve_config
    return resolve(config) if resolve is not None else config


def encoder_tokenizer_path(config: ModelConfig) -> str | None:
    """The tokenizer the encoder of ``config`` comes with (a run's tokenizer when ``tokenizer.path`` is null)."""
    own = encoder_spec(str(config.encoder)).tokenizer_path
    return own(config) if own is not None else None


def run_tokenizer_config(tokenizer: TokenizerConfig, model: ModelConfig) -> TokenizerConfig:
    """The tokenizer options of a run (``hiersum train``, ``hiersum prepare``): ``tokenizer``, whose null ``path`` is
    the tokenizer the encoder comes with (:func:`encoder_tokenizer_path`), if any."""
    if tokenizer.path is not None:
        return tokenizer
    return replace(tokenizer, path=encoder_tokenizer_path(model))


def build_encoder(config: ModelConfig, *, embeddings: nn.Embedding) -> nn.Module:
    """The encoder of ``config`` (validated), sharing ``embeddings``; a one-line ``ValueError`` when what the entry
    builds does not satisfy :class:`~hiersum.model.encoder_contract.Encoder`."""
    return check_encoder(validate_encoder(config).cls(config, embeddings=embeddings), str(config.encoder))


def source_layout(config: ModelConfig) -> SourceLayout:
    """The source layout the encoder of ``config`` reads (what the datamodule's ``layout`` is)."""
    return encoder_spec(str(config.encoder)).source_layout


def batch_layout(config: ModelConfig, tokenizer: SubwordTokenizer) -> FlatLayout | None:
    """``collate``'s ``flat`` argument for the model of ``config``: a :class:`FlatLayout`, or None for the grid."""
    return flat_layout(source_layout(config), config, tokenizer)


def validate_choices(cfg: Any) -> None:
    """Check the registered choices of a typed command config (``model.encoder`` with its options, ``model.decoder``
    and ``data.format``, where the config has these groups): what cannot be is a one-line
    :class:`~hiersum.errors.UsageError`."""
    model, data = (getattr(cfg, key, None) for key in ("model", "data"))
    try:
        if model is not None:
            encoder_spec(str(model.encoder))
            validate_encoder(model)
            decoder_spec(str(model.decoder))
            resolve_model_config(model)  # a pretrained encoder's directory is read (and a missing one refused) now
        if data is not None:
            validate_format(data)
    except ValueError as error:
        raise UsageError(str(error)) from None


register_encoder("hierarchical", EncoderSpec(
    HierarchicalEncoder, source_layout=SourceLayout.GRID, inter_paragraph=True, official_hier=True,
    description="the paper's local + inter-paragraph transformer over [B, P, T]",
))
register_encoder("flat", EncoderSpec(
    FlatEncoder, source_layout=SourceLayout.FLAT, inter_paragraph=False, official_hier=False,
    description="the flat transformer baseline (FT) over the joined paragraphs [B, L]",
))
register_encoder("pretrained", EncoderSpec(
    PretrainedEncoder, source_layout=SourceLayout.GRID, inter_paragraph=True, official_hier=None,
    description="a local Hugging Face BERT-family encoder per paragraph, then inter-paragraph layers over [B, P, T]",
    resolve_config=resolve_pretrained_config, tokenizer_path=lambda config: config.pretrained_encoder,
    shared_embeddings=False,
))
