"""Import checkpoints of the official hiersumm code (nlpyang/hiersumm) into :class:`HierSum`.

The official checkpoint is ``{'model': state_dict, 'opt': argparse.Namespace, ...}``, hierarchical
(``opt.hier``) or flat. Sizes come from tensor shapes, head counts and inter layers from ``opt``.
Keys are renamed by the small ordered table :data:`RENAMES`; constant buffers (:data:`SKIPPED`) are
dropped; old LayerNorm names (``a_2``/``b_2``) are accepted; the tied embedding aliases must hold one
table. :func:`official_key` is the inverse renaming, used to export a HierSum in the official format
(:func:`official_checkpoint`), e.g. to test the importer on models of any size.

:func:`hiersum_checkpoint` turns an imported model into a normal hiersum checkpoint (what
``hiersum import-hiersumm`` writes), which :func:`hiersum.checkpoints.io.load_network` loads.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import astuple
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from hiersum.checkpoints.contents import CHECKPOINT_EXTRA_KEY
from hiersum.checkpoints.io import MODEL_PREFIX, load_checkpoint_file
from hiersum.checkpoints.kinds import OFFICIAL, rebuilding
from hiersum.checkpoints.migration import optim_config
from hiersum.config import DataConfig, ModelConfig, OptimConfig, Selection, config_dict
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.model.encoder_registry import ENCODERS, encoder_spec
from hiersum.model.layers import sinusoid_table
from hiersum.model.summarizer import HierSum

OFFICIAL_PAD_ID, OFFICIAL_BOS_ID, OFFICIAL_EOS_ID = 6, 4, 5
"""Special ids of the official SentencePiece vocabulary."""

RENAMES: list[tuple[str, str]] = [
    # old LayerNorm parameter names
    (r"\.a_2$", ".weight"),
    (r"\.b_2$", ".bias"),
    # containers (the flat encoder's layers are ``transformer_local``)
    (r"^(encoder|decoder)\.transformer_layers\.", r"\1.layers."),
    (r"^encoder\.transformer_local\.", "encoder.layers."),
    (r"^(encoder|decoder)\.layer_norm\.", r"\1.final_norm."),
    (r"^generator\.0\.", "generator."),
    # attention
    (r"\.linear_query\.", ".query."),
    (r"\.final_linear\.", ".out."),
    (r"\.pooling\.linear_keys\.", ".pooling.score."),
    (r"\.pooling\.linear_values\.", ".pooling.value."),
    (r"\.linear_keys\.", ".key."),
    (r"\.linear_values\.", ".value."),
    (r"\.inter_att\.", ".inter_attn."),
    # feed-forward
    (r"\.feed_forward\.w_1\.", ".feed_forward.w_in."),
    (r"\.feed_forward\.w_2\.", ".feed_forward.w_out."),
    (r"\.feed_forward\.layer_norm\.", ".feed_forward.norm."),
    # layer norms and the inter layer's output projection
    (r"(layers\.\d+)\.layer_norm\.", r"\1.norm."),
    (r"(layers\.\d+)\.layer_norm1\.", r"\1.norm."),
    (r"(layers\.\d+)\.layer_norm2\.", r"\1.head_norm."),
    (r"(layers\.\d+)\.layer_norm_1\.", r"\1.self_attn_norm."),
    (r"(layers\.\d+)\.layer_norm_2\.", r"\1.context_norm."),
    (r"(layers\.\d+)\.linear\.", r"\1.out."),
]
"""Ordered (pattern, replacement) pairs turning an official key into a HierSum key."""

SKIPPED = [r"\.pos_emb\.pe$", r"^decoder\.transformer_layers\.\d+\.mask$"]
"""Official buffers that are constants here (position tables, causal masks)."""

TIED = ["encoder.embeddings.weight", "decoder.embeddings.weight", "generator.0.weight"]
"""Official keys that must hold one and the same table (shared embeddings)."""


def official_key_to_ours(key: str) -> str:
    """Rename one official state-dict key (see :data:`RENAMES`)."""
    for pattern, replacement in RENAMES:
        key = re.sub(pattern, replacement, key)
    return key


def parse_inter_layers(value: Any) -> list[int]:
    """``opt.inter_layers`` as a list of ints: accepts [6, 7], "6,7", "[6, 7]"."""
    if isinstance(value, str):
        return [int(part) for part in re.findall(r"-?\d+", value)]
    return [int(v) for v in value]


def _layer_count(state: dict[str, Tensor], prefix: str) -> int:
    indices = {
        int(m.group(1))
        for k in state
        if (m := re.match(rf"{prefix}\.transformer_(?:layers|local)\.(\d+)\.", k))
    }
    return max(indices) + 1 if indices else 0


def official_hier(config: ModelConfig) -> bool:
    """The official ``-hier`` flag of ``config``'s encoder (its registry entry's ``official_hier``): True
    for layers ``transformer_layers`` and half-width position tables, False for the flat encoder's
    ``transformer_local``. An encoder without official counterpart raises ValueError."""
    hier = encoder_spec(config.encoder).official_hier
    if hier is None:
        raise ValueError(f"model.encoder={config.encoder} has no counterpart in the official hiersumm code")
    return hier


def official_encoder(hier: bool) -> str:
    """The registered encoder of the official ``-hier`` flag ``hier``."""
    names = [name for name, spec in ENCODERS.items() if spec.official_hier is bool(hier)]
    if not names:
        raise ValueError(f"no registered encoder has official_hier={bool(hier)}")
    return names[0]


def _first(state: dict[str, Tensor], pattern: str) -> Tensor:
    for key, value in state.items():
        if re.search(pattern, key):
            return value
    raise ValueError(f"the checkpoint has no key matching {pattern!r}")


def config_from_official(state: dict[str, Tensor], opt: argparse.Namespace) -> ModelConfig:
    """Model sizes of an official checkpoint, hierarchical or flat (shapes, plus heads from ``opt``)."""
    pe = state.get("decoder.pos_emb.pe")
    sizes: dict[str, Any] = dict(
        d_model=state["encoder.embeddings.weight"].size(1),
        heads=int(opt.heads),
        ff_size=_first(state, r"^encoder\..*\.feed_forward\.w_1\.weight$").size(0),
        encoder_layers=_layer_count(state, "encoder"),
        decoder_layers=_layer_count(state, "decoder"),
        dropout=float(getattr(opt, "enc_dropout", 0.0)),
        max_positions=5000 if pe is None else pe.size(1),
    )
    if not getattr(opt, "hier", True):
        return ModelConfig(
            **sizes, encoder=official_encoder(False), inter_layers=[], inter_heads=int(opt.heads),
            flat_max_tokens=int(getattr(opt, "trunc_src_ntoken", 500)),
        )
    inter_layers = parse_inter_layers(opt.inter_layers)
    pooling = r"encoder\.transformer_layers\.(\d+)\.pooling\.linear_keys\.weight"
    pooling_heads = {
        int(m.group(1)): v.size(0) for k, v in state.items() if (m := re.match(pooling, k))
    }
    if sorted(pooling_heads) != sorted(inter_layers):
        raise ValueError(
            f"opt.inter_layers={opt.inter_layers!r} but the checkpoint pools in layers "
            f"{sorted(pooling_heads)}"
        )
    inter_heads = int(opt.inter_heads)
    if any(heads != inter_heads for heads in pooling_heads.values()):
        raise ValueError(f"opt.inter_heads={inter_heads} but the pooling heads are {pooling_heads}")
    return ModelConfig(**sizes, encoder=official_encoder(True), inter_layers=inter_layers, inter_heads=inter_heads)


def convert_state_dict(official: dict[str, Tensor]) -> dict[str, Tensor]:
    """Rename official keys to HierSum keys, dropping constant buffers; checks the tied tables."""
    tied = [official[k] for k in TIED if k in official]
    if any(not torch.equal(t, tied[0]) for t in tied[1:]):
        raise ValueError(
            f"the checkpoint's {TIED} are not one shared table; untied embeddings are not supported"
        )
    return {
        official_key_to_ours(key): value
        for key, value in official.items()
        if not any(re.search(pattern, key) for pattern in SKIPPED)
    }


def load_official_hiersumm(
    path: str | Path,
    *,
    pad_id: int = OFFICIAL_PAD_ID,
    bos_id: int = OFFICIAL_BOS_ID,
    eos_id: int = OFFICIAL_EOS_ID,
) -> HierSum:
    """Load an official hiersumm checkpoint file (hierarchical or flat) as a :class:`HierSum` in eval mode; any
    failure raises :class:`hiersum.checkpoints.CheckpointError`."""
    return official_model(path, read_official_checkpoint(path), pad_id=pad_id, bos_id=bos_id, eos_id=eos_id)


def read_official_checkpoint(path: str | Path) -> dict[str, Any]:
    """An official checkpoint ``{'model', 'opt'}`` (:func:`hiersum.checkpoints.io.load_checkpoint_file`,
    ``weights_only=True`` allowing ``argparse.Namespace``, its ``opt``)."""
    return load_checkpoint_file(path, OFFICIAL)


def official_model(path: str | Path, checkpoint: dict[str, Any], **special_ids: int) -> HierSum:
    """:func:`hiersum_from_official` of the checkpoint read from ``path``; a checkpoint that does not map onto
    :class:`HierSum` raises :class:`hiersum.checkpoints.CheckpointError`."""
    with rebuilding(path, OFFICIAL, "'model' and 'opt'"):
        return hiersum_from_official(checkpoint, **special_ids)


def hiersum_from_official(
    checkpoint: dict[str, Any],
    *,
    pad_id: int = OFFICIAL_PAD_ID,
    bos_id: int = OFFICIAL_BOS_ID,
    eos_id: int = OFFICIAL_EOS_ID,
) -> HierSum:
    """A :class:`HierSum` (eval mode) from a loaded official checkpoint ``{'model', 'opt'}``."""
    if not isinstance(checkpoint, dict) or "model" not in checkpoint or "opt" not in checkpoint:
        raise ValueError("expected an official checkpoint {'model': state_dict, 'opt': Namespace}")
    official = checkpoint["model"]
    config = config_from_official(official, checkpoint["opt"])
    model = HierSum(
        config,
        vocab_size=official["encoder.embeddings.weight"].size(0),
        pad_id=pad_id,
        bos_id=bos_id,
        eos_id=eos_id,
    )
    state = convert_state_dict(official)
    renamed = {official_key_to_ours(key): key for key in official}
    expected = set(model.state_dict())
    unmapped = sorted(renamed[key] for key in set(state) - expected)
    missing = sorted(expected - set(state))
    if unmapped or missing:
        raise ValueError(
            "cannot map the official checkpoint onto HierSum (extend convert.RENAMES).\n"
            f"  official keys with no HierSum counterpart: {unmapped}\n"
            f"  HierSum keys the checkpoint does not fill: {missing}"
        )
    model.load_state_dict(state, strict=True)
    return model.eval()


def official_key(key: str, config: ModelConfig) -> str:
    """The official name of a HierSum state-dict key (the inverse of :func:`official_key_to_ours`)."""
    if key.startswith("generator."):
        return "generator.0." + key.removeprefix("generator.")
    key = re.sub(r"^(encoder|decoder)\.final_norm\.", r"\1.layer_norm.", key)
    match = re.match(r"^(encoder|decoder)\.layers\.(\d+)\.(.*)$", key)
    if not match:
        return key
    side, index, rest = match.group(1), int(match.group(2)), match.group(3)
    inter = side == "encoder" and index in {int(i) for i in config.inter_layers}
    container = "transformer_local" if side == "encoder" and not official_hier(config) else "transformer_layers"
    for pattern, replacement in [
        (r"^feed_forward\.w_in\.", "feed_forward.w_1."),
        (r"^feed_forward\.w_out\.", "feed_forward.w_2."),
        (r"^feed_forward\.norm\.", "feed_forward.layer_norm."),
        (r"^pooling\.score\.", "pooling.linear_keys."),
        (r"^pooling\.value\.", "pooling.linear_values."),
        (r"^inter_attn\.", "inter_att."),
        (r"^(self_attn|context_attn|inter_att)\.query\.", r"\1.linear_query."),
        (r"^(self_attn|context_attn|inter_att)\.key\.", r"\1.linear_keys."),
        (r"^(self_attn|context_attn|inter_att)\.value\.", r"\1.linear_values."),
        (r"^(self_attn|context_attn|inter_att)\.out\.", r"\1.final_linear."),
        (r"^norm\.", "layer_norm1." if inter else "layer_norm."),
        (r"^head_norm\.", "layer_norm2."),
        (r"^self_attn_norm\.", "layer_norm_1."),
        (r"^context_norm\.", "layer_norm_2."),
        (r"^out\.", "linear."),
    ]:
        rest = re.sub(pattern, replacement, rest)
    return f"{side}.{container}.{index}.{rest}"


def official_state_dict(
    model: HierSum, *, old_layer_norm_names: bool = False, decoder_masks: bool = False
) -> dict[str, Tensor]:
    """``model``'s weights under the official keys, with the official position-table buffers (and the
    decoder's causal-mask buffers when ``decoder_masks``); LayerNorm parameters named ``a_2``/``b_2``
    when ``old_layer_norm_names``. Raises for parameters the official model lacks (``model.graph``)."""
    config = model.config
    if config.graph != "none":
        raise ValueError("the official model has no graph-informed attention (model.graph must be 'none')")
    state: dict[str, Tensor] = {}
    for key, value in model.state_dict().items():
        name = official_key(key, config)
        if old_layer_norm_names and "layer_norm" in name:
            name = re.sub(r"\.weight$", ".a_2", re.sub(r"\.bias$", ".b_2", name))
        state[name] = value.detach().clone()
    half = official_hier(config)
    state["encoder.pos_emb.pe"] = sinusoid_table(config.max_positions, config.d_model // (2 if half else 1))[None]
    state["decoder.pos_emb.pe"] = sinusoid_table(config.max_positions, config.d_model)[None]
    if decoder_masks:
        size = config.max_positions
        for index in range(config.decoder_layers):
            state[f"decoder.transformer_layers.{index}.mask"] = torch.ones(1, size, size, dtype=torch.uint8).triu(1)
    return state


def official_checkpoint(model: HierSum, **options: bool) -> dict[str, Any]:
    """``{'model': official_state_dict(model, **options), 'opt': Namespace}``: ``model`` in the official
    checkpoint format (``opt`` holds the flags the importer reads)."""
    config = model.config
    opt = argparse.Namespace(
        hier=official_hier(config), heads=config.heads, inter_heads=config.inter_heads,
        inter_layers=list(config.inter_layers), enc_dropout=config.dropout, trunc_src_ntoken=config.flat_max_tokens,
    )
    return {"model": official_state_dict(model, **options), "opt": opt}


def official_training_configs(opt: argparse.Namespace) -> tuple[OptimConfig, DataConfig]:
    """The optimizer and data settings of an official run (``opt``), paper defaults where absent:
    Adam (0.9, 0.998), noam lr 3 / warm-up 8000, label smoothing 0.1; ranked WikiSum, 24 paragraphs in
    training and 40 at test, targets of at most ``trunc_tgt_ntoken`` tokens."""
    optim = optim_config({  # Adam + noam, in the flat keys of earlier hiersum checkpoints
        "lr": float(getattr(opt, "lr", 3.0)),
        "warmup_steps": int(getattr(opt, "warmup_steps", 8000)),
        "betas": [float(getattr(opt, "beta1", 0.9)), float(getattr(opt, "beta2", 0.998))],
        "label_smoothing": float(getattr(opt, "label_smoothing", 0.1)),
    })
    data = DataConfig(
        path="", format="wikisum", max_paragraphs=int(getattr(opt, "trunc_src_nblock", 24)), eval_max_paragraphs=40,
        max_paragraph_tokens=int(getattr(opt, "trunc_src_ntoken", 500)),
        max_target_tokens=int(getattr(opt, "trunc_tgt_ntoken", 400)), selection=Selection.first, title_paragraph=False,
    )
    return optim, data


def hiersum_checkpoint(
    model: HierSum, opt: argparse.Namespace, *, tokenizer: SubwordTokenizer | None = None
) -> dict[str, Any]:
    """A hiersum checkpoint (as Lightning writes for :class:`~hiersum.training.module.HierSumModule`) of an
    imported model: ``state_dict`` (keys ``model.*``), ``hyper_parameters`` (the module's keyword
    arguments, optimizer and data settings from ``opt``) and ``hiersum: {"tokenizer_json": ...}``
    (None without ``tokenizer``: the commands then cannot decode text)."""
    optim, data = official_training_configs(opt)
    expected = (model.vocab_size, (model.pad_id, model.bos_id, model.eos_id))
    if tokenizer is not None and (tokenizer.vocab_size, astuple(tokenizer.special)) != expected:
        raise ValueError(
            f"the tokenizer (vocabulary size, (pad, bos, eos)) = {(tokenizer.vocab_size, astuple(tokenizer.special))} "
            f"does not match the checkpoint's {expected}"
        )
    hparams = {
        "model": config_dict(model.config), "optim": config_dict(optim), "data": config_dict(data),
        "vocab_size": model.vocab_size,
        "pad_id": model.pad_id, "bos_id": model.bos_id, "eos_id": model.eos_id,
    }
    return {
        "state_dict": {MODEL_PREFIX + name: tensor for name, tensor in model.state_dict().items()},
        "hyper_parameters": hparams,
        CHECKPOINT_EXTRA_KEY: {"tokenizer_json": tokenizer.to_str() if tokenizer else None},
    }
