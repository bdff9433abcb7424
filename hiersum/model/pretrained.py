"""A pretrained BERT-family paragraph encoder read from a local Hugging Face directory (``model.encoder=pretrained``).

Each real paragraph of the [B, P, T] grid is encoded on its own by the pretrained model
(``transformers.AutoModel``), wrapped as it was trained: ``[CLS] tokens [SEP]`` (``model.pretrained_wrap_ids``, whose
states are dropped); a sinusoid of the paragraph's index is
added to its token states; then ``model.encoder_layers`` new layers at the encoder's width, of which
``model.inter_layers`` are the inter-paragraph layers of the hierarchical encoder (multi-head pooling,
paragraph attention, the paragraph vector added back to its tokens) and the others paragraph-local layers;
a final LayerNorm; the real tokens packed into the decoder's memory, as the hierarchical encoder does. The new
layers compute on the real tokens only (:func:`hiersum.model.encoder.run_packed_layers`, as the hierarchical
encoder; the padded-grid reference they are tested against lives in ``tests/helpers/padded.py``).

The encoder satisfies :class:`hiersum.model.encoder_contract.Encoder` and declares the optional capability
:class:`~hiersum.model.encoder_contract.PretrainedWeights`.

Where the weights come from:

- building for training: ``model.pretrained_encoder`` names the directory, read with ``local_files_only``
  (never the hub); :func:`resolve_pretrained_config` first copies its config into
  ``model.pretrained_config_json`` and sets ``model.d_model`` to its hidden size;
- rebuilding from a checkpoint (:func:`hiersum.checkpoints.io.network_from_hparams`): ``pretrained_encoder`` is
  dropped and the encoder is built from ``pretrained_config_json`` with random weights, which the checkpoint's
  state dict then replaces; the directory is not needed.

Paragraphs longer than the encoder's position table (``max_position_embeddings``) are cut to it; the cut
paragraphs are counted (:attr:`PretrainedEncoder.paragraphs_cut`) and logged.

A fully frozen encoder (``model.pretrained_frozen_layers`` = its layer count and ``model.pretrained_frozen_embeddings``)
is a fixed feature extractor: it runs in eval mode (no dropout) whatever the mode of the rest, and with
``model.pretrained_cache_states`` each distinct paragraph is encoded once (:class:`ParagraphStateCache`): after the
first epoch a training step runs only the new layers and the decoder.

Dimensions
    B  batch
    P  paragraphs per example
    T  tokens per paragraph
    R  real (non-empty) paragraphs of the batch
    D  width: the pretrained encoder's hidden size (``model.d_model``)
    M  packed memory length

Masks are boolean with True = real token; ``src_mask`` is [B, P, T].
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from hiersum.config import ModelConfig
from hiersum.data.packing import PackedGrid
from hiersum.model.encoder import check_grid, hierarchical_layers, run_packed_layers
from hiersum.model.encoder_contract import EncoderOutput
from hiersum.model.layers import LAYER_NORM_EPS, sinusoid_rows, sinusoid_table

log = logging.getLogger(__name__)


def read_encoder_config(directory: str | Path) -> str:
    """The Hugging Face config of the encoder in ``directory``, as JSON (``local_files_only``).

    Raises a one-line ``ValueError`` naming ``model.pretrained_encoder`` when the directory has no ``config.json``.
    """
    from transformers import AutoConfig

    path = Path(directory)
    if not (path / "config.json").is_file():
        raise ValueError(
            f"model.pretrained_encoder={directory}: expected a local Hugging Face model directory with a config.json"
        )
    return AutoConfig.from_pretrained(str(path), local_files_only=True).to_json_string(use_diff=False)


def hf_config(config_json: str) -> Any:
    """A ``transformers`` config object from :func:`read_encoder_config`'s JSON."""
    from transformers import CONFIG_MAPPING

    values = json.loads(config_json)
    return CONFIG_MAPPING[values["model_type"]].from_dict(values)


def read_wrap_ids(directory: str | Path) -> list[int]:
    """[cls id, sep id] of the tokenizer in ``directory`` (what BERT-family encoders put around a text); [] when it
    lacks either."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    ids = [tokenizer.cls_token_id, tokenizer.sep_token_id]
    return [int(i) for i in ids] if None not in ids else []


def resolve_pretrained_config(config: ModelConfig) -> ModelConfig:
    """``config`` completed from its encoder's directory, where not already there: ``pretrained_config_json``,
    ``pretrained_wrap_ids``, and ``d_model`` = the encoder's hidden size. What checkpoints record."""
    config_json, wrap_ids = config.pretrained_config_json, config.pretrained_wrap_ids
    if config_json is None or wrap_ids is None:
        if not config.pretrained_encoder:
            raise ValueError("model.encoder=pretrained needs model.pretrained_encoder=/path/to/hf_model_dir")
        config_json = config_json or read_encoder_config(config.pretrained_encoder)
        wrap_ids = read_wrap_ids(config.pretrained_encoder) if wrap_ids is None else wrap_ids
    hidden_size = int(hf_config(config_json).hidden_size)
    if (config.pretrained_config_json, config.pretrained_wrap_ids, config.d_model) == (config_json, wrap_ids,
                                                                                        hidden_size):
        return config
    return replace(config, pretrained_config_json=config_json, pretrained_wrap_ids=wrap_ids, d_model=hidden_size)


def load_pretrained_model(config: ModelConfig) -> nn.Module:
    """The ``transformers`` encoder of a resolved ``config``: weights from ``pretrained_encoder`` when it is set,
    else random weights of ``pretrained_config_json`` (to be replaced by a checkpoint's). float32, no pooler."""
    from transformers import AutoModel

    if config.pretrained_encoder:
        model = AutoModel.from_pretrained(config.pretrained_encoder, local_files_only=True)
    elif config.pretrained_config_json:
        model = AutoModel.from_config(hf_config(config.pretrained_config_json))
    else:
        raise ValueError("model.encoder=pretrained needs model.pretrained_encoder=/path/to/hf_model_dir")
    if getattr(model, "pooler", None) is not None:
        model.pooler = None  # the [CLS] pooler is not used (its weights would get no gradient)
    return model.float().train()  # from_pretrained returns eval mode; a new module trains (as nn.Module)


def transformer_layers(model: nn.Module) -> nn.ModuleList:
    """The stack of transformer layers of a ``transformers`` encoder (BERT: ``encoder.layer``): the
    ``ModuleList`` of ``config.num_hidden_layers`` modules."""
    count = model.config.num_hidden_layers
    for module in model.modules():
        if isinstance(module, nn.ModuleList) and len(module) == count:
            return module
    raise ValueError(f"found no list of {count} transformer layers in {type(model).__name__}")


class PretrainedEncoder(nn.Module):
    """A pretrained BERT-family encoder per paragraph, then new local / inter-paragraph layers (module docstring).

    Args:
        config: a config resolved by :func:`resolve_pretrained_config` (``d_model`` = the encoder's hidden size).
        embeddings: the decoder's embedding table [V, D]; with ``config.tie_decoder_embeddings`` its weight becomes
            the encoder's word embeddings (the vocabulary sizes must match).
    """

    def __init__(self, config: ModelConfig, *, embeddings: nn.Embedding):
        super().__init__()
        self.pretrained = load_pretrained_model(config)
        encoder_config = self.pretrained.config
        D = int(encoder_config.hidden_size)
        if config.d_model != D:
            raise ValueError(f"model.d_model={config.d_model} must be the pretrained encoder's hidden size {D}")
        self.wrap_ids = list(config.pretrained_wrap_ids or [])
        """[before, after] ids around each paragraph (``[CLS]``, ``[SEP]``), or []."""
        self.max_tokens = int(encoder_config.max_position_embeddings) - len(self.wrap_ids)
        """Longest paragraph the position table holds (with its wrapping ids); longer ones are cut."""
        word_embeddings = self.pretrained.get_input_embeddings()
        if embeddings.num_embeddings > word_embeddings.num_embeddings:
            raise ValueError(f"the tokenizer has {embeddings.num_embeddings} tokens, the pretrained encoder's "
                             f"vocabulary {word_embeddings.num_embeddings}: use the directory's own tokenizer")
        if config.tie_decoder_embeddings:
            if embeddings.num_embeddings != word_embeddings.num_embeddings:
                raise ValueError(f"model.tie_decoder_embeddings=true needs the tokenizer's {embeddings.num_embeddings} "
                                 f"tokens to equal the encoder's {word_embeddings.num_embeddings}; set it to false")
            embeddings.weight = word_embeddings.weight
        layers = transformer_layers(self.pretrained)
        if config.pretrained_frozen_layers > len(layers):
            raise ValueError(f"model.pretrained_frozen_layers={config.pretrained_frozen_layers} exceeds the encoder's "
                             f"{len(layers)} layers")
        for layer in layers[: config.pretrained_frozen_layers]:
            layer.requires_grad_(False)
        if config.pretrained_frozen_embeddings:
            input_embeddings = getattr(self.pretrained, "embeddings", None)
            if not isinstance(input_embeddings, nn.Module):
                raise ValueError(f"model.pretrained_frozen_embeddings=true: {type(self.pretrained).__name__} has no "
                                 f"'embeddings' module to freeze")
            input_embeddings.requires_grad_(False)
        self.frozen = config.pretrained_frozen_embeddings and config.pretrained_frozen_layers == len(layers)
        """The whole pretrained encoder is frozen: it runs in eval mode from the start and stays so (:meth:`train`;
        Lightning's loops restore each module's own mode)."""
        if self.frozen:
            self.pretrained.eval()
        if config.pretrained_cache_states and not self.frozen:
            raise ValueError(f"model.pretrained_cache_states=true needs every layer frozen: "
                             f"model.pretrained_frozen_layers={config.pretrained_frozen_layers}, the encoder has "
                             f"{len(layers)}")
        self.state_cache = ParagraphStateCache() if config.pretrained_cache_states else None
        """Token states per distinct paragraph (``model.pretrained_cache_states``), or None."""
        self.copy_decoder_embeddings = config.copy_decoder_embeddings
        if self.copy_decoder_embeddings and embeddings.num_embeddings != word_embeddings.num_embeddings:
            raise ValueError(f"model.copy_decoder_embeddings=true needs the tokenizer's {embeddings.num_embeddings} "
                             f"tokens to equal the encoder's {word_embeddings.num_embeddings}")
        self.register_buffer("positions", sinusoid_table(config.max_positions, D), persistent=False)
        self.layers = hierarchical_layers(config, D)
        self.final_norm = nn.LayerNorm(D, eps=LAYER_NORM_EPS)
        self.paragraphs_cut = 0
        """Paragraphs cut to :attr:`max_tokens` so far (logged when it grows)."""

    def pretrained_parameters(self) -> list[nn.Parameter]:
        """:class:`~hiersum.model.encoder_contract.PretrainedWeights`: the pretrained encoder's parameters (the tied
        decoder embeddings among them): not re-initialised by :meth:`HierSum.reset_parameters`; their own optimizer
        group with ``optim.pretrained_group``."""
        return list(self.pretrained.parameters())

    def train(self, mode: bool = True) -> PretrainedEncoder:
        """As ``nn.Module.train``, except that a fully frozen pretrained encoder (:attr:`frozen`) stays in eval mode."""
        super().train(mode)
        if self.frozen:
            self.pretrained.eval()
        return self

    def initialise_decoder_embeddings(self, embeddings: nn.Embedding) -> None:
        """:class:`~hiersum.model.encoder_contract.PretrainedWeights`: with ``model.copy_decoder_embeddings``, the
        decoder's table [V, D] becomes a copy of the encoder's word embeddings (called by
        :meth:`HierSum.reset_parameters` after the random initialisation)."""
        if self.copy_decoder_embeddings:
            with torch.no_grad():
                embeddings.weight.copy_(self.pretrained.get_input_embeddings().weight)

    def cut_paragraphs(self, src: Tensor, src_mask: Tensor) -> tuple[Tensor, Tensor]:
        """Cut [B, P, T] to at most :attr:`max_tokens` tokens per paragraph, counting the paragraphs cut."""
        if src.size(-1) <= self.max_tokens:
            return src, src_mask
        cut = int((src_mask.sum(-1) > self.max_tokens).sum())
        if cut:
            self.paragraphs_cut += cut
            log.warning("cut %d paragraphs to the %d tokens the pretrained encoder's position table holds "
                        "(%d so far)", cut, self.max_tokens, self.paragraphs_cut)
        return src[..., : self.max_tokens].contiguous(), src_mask[..., : self.max_tokens].contiguous()

    def encode_paragraphs(self, src: Tensor, src_mask: Tensor) -> Tensor:
        """The pretrained encoder over each real paragraph: src long [B, P, T], src_mask bool [B, P, T] ->
        token states [B, P, T, D], zero in empty paragraphs; read from :attr:`state_cache` when there is one.
        (Sorting the paragraphs into length buckets, one call each, was tried and was no faster on CPU for SciTLDR
        batches.)"""
        B, P, T = src.shape
        real = src_mask.any(-1).view(B * P)  # (B*P,)
        ids = src.view(B * P, T)[real]  # (R, T)
        mask = src_mask.view(B * P, T)[real]  # (R, T)
        if self.state_cache is not None:
            grid = torch.zeros(B * P, T, self.pretrained.config.hidden_size, device=src.device)
            grid[src_mask.view(B * P, T)] = self.state_cache.lookup(ids, mask, self.encode_real_paragraphs)
            return grid.view(B, P, T, -1)  # (B, P, T, D)
        states = self.encode_real_paragraphs(ids, mask)  # (R, T, D)
        grid = states.new_zeros(B * P, T, states.size(-1)).index_put((real.nonzero().squeeze(1),), states)
        return grid.view(B, P, T, -1)  # (B, P, T, D)

    def encode_real_paragraphs(self, ids: Tensor, mask: Tensor) -> Tensor:
        """The pretrained encoder over R paragraphs, each on its own: ids long [R, T], mask bool [R, T] (left-aligned,
        at least one real token each) -> token states [R, T, D]."""
        T = ids.size(1)
        if self.wrap_ids:
            ids, mask = self.wrap(ids, mask)  # (R, T + 2)
        states = self.pretrained(input_ids=ids, attention_mask=mask.long()).last_hidden_state  # (R, T or T + 2, D)
        if self.wrap_ids:
            states = states[:, 1 : T + 1]  # (R, T, D): the paragraph's tokens (a [SEP] state falls on padding)
        return states

    def wrap(self, ids: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """``[CLS] tokens [SEP]`` (:attr:`wrap_ids`) of left-aligned paragraphs: ids long [R, T], mask bool [R, T]
        -> [R, T + 2] each."""
        R, T = ids.shape
        before, after = self.wrap_ids
        lengths = mask.sum(-1)  # (R,)
        wrapped = torch.cat([ids.new_full((R, 1), before), ids, ids.new_zeros(R, 1)], 1)  # (R, T + 2)
        wrapped[torch.arange(R, device=ids.device), lengths + 1] = after
        wrapped_mask = torch.arange(T + 2, device=ids.device) < (lengths + 2).unsqueeze(1)  # (R, T + 2)
        return wrapped, wrapped_mask

    def forward(
        self, src: Tensor, src_mask: Tensor, *, paragraph_graph: Tensor | None = None, return_attention: bool = False,
        layout: PackedGrid | None = None,
    ) -> EncoderOutput:
        """The :class:`~hiersum.model.encoder_contract.Encoder` contract: src [B, P, T] long; src_mask bool
        [B, P, T], True = real token; paragraph_graph float [B, P, P], required when ``model.graph`` is not
        ``none``. ``token_states`` is [B, P, min(T, max_tokens), D]. ``layout`` is ignored: the layout is made
        after cutting the paragraphs (:meth:`cut_paragraphs`)."""
        src, src_mask = self.encoder_input(src, src_mask)
        states = self.encode_paragraphs(src, src_mask)  # (B, P, T, D)
        layout = PackedGrid.from_mask(src_mask)
        x = states.view(-1, states.size(-1)).index_select(0, layout.grid_index)  # (N, D): the real tokens
        x = x + sinusoid_rows(self.positions, layout.paragraph_position, src.size(1))  # (N, D)
        return run_packed_layers(self.layers, self.final_norm, x, layout, ids=layout.pack(src),
                                 paragraph_graph=paragraph_graph, return_attention=return_attention)

    def encoder_input(self, src: Tensor, src_mask: Tensor) -> tuple[Tensor, Tensor]:
        """``src`` and ``src_mask`` [B, P, T] checked and cut to :attr:`max_tokens` (:meth:`cut_paragraphs`)."""
        check_grid(src, src_mask)
        src, src_mask = self.cut_paragraphs(src, src_mask)
        return src, src_mask


class ParagraphStateCache:
    """The token states of a fixed (fully frozen, eval-mode) encoder for each distinct paragraph seen, keyed by the
    paragraph's token ids, on the device they were computed on. Not saved in checkpoints: a resumed run rebuilds it."""

    def __init__(self) -> None:
        self.states: dict[bytes, Tensor] = {}
        """Paragraph token ids (int64 bytes) -> its states [length, D]."""
        self.hits = 0
        self.misses = 0

    def lookup(self, ids: Tensor, mask: Tensor, encode: Callable[[Tensor, Tensor], Tensor]) -> Tensor:
        """The states of R paragraphs (ids long [R, T], mask bool [R, T], left-aligned), their real tokens packed in
        row order: [N_real, D]. Paragraphs not in the cache are encoded together, without gradient, by ``encode``
        (ids, mask -> [R', T', D]) and kept."""
        lengths = mask.sum(-1).tolist()  # R ints
        rows = ids.cpu().numpy()
        keys = [rows[r, :length].tobytes() for r, length in enumerate(lengths)]
        missing = [r for r, key in enumerate(keys) if key not in self.states]
        missing = list({keys[r]: r for r in missing}.values())  # one row per distinct new paragraph
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        if missing:
            index = torch.tensor(missing, device=ids.device)
            width = max(lengths[r] for r in missing)
            with torch.no_grad():
                states = encode(ids[index, :width], mask[index, :width])  # (R', width, D)
            for row, paragraph_states in zip(missing, states, strict=True):
                self.states[keys[row]] = paragraph_states[: lengths[row]].clone()
        return torch.cat([self.states[key] for key in keys]).to(ids.device)  # (N_real, D); the model may have moved
