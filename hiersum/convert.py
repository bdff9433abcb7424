"""Import checkpoints of the official hiersumm code (nlpyang/hiersumm) into :class:`HierSum`.

The official checkpoint is ``{'model': state_dict, 'opt': argparse.Namespace, ...}``. Sizes come
from tensor shapes, head counts and inter layers from ``opt``. Keys are renamed by the small
ordered table :data:`RENAMES`; constant buffers (:data:`SKIPPED`) are dropped.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from hiersum.config import ModelConfig
from hiersum.model.summarizer import HierSum

OFFICIAL_PAD_ID, OFFICIAL_BOS_ID, OFFICIAL_EOS_ID = 6, 4, 5
"""Special ids of the official SentencePiece vocabulary."""

RENAMES: list[tuple[str, str]] = [
    # old LayerNorm parameter names
    (r"\.a_2$", ".weight"),
    (r"\.b_2$", ".bias"),
    # containers
    (r"^(encoder|decoder)\.transformer_layers\.", r"\1.layers."),
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
        if (m := re.match(rf"{prefix}\.transformer_layers\.(\d+)\.", k))
    }
    return max(indices) + 1 if indices else 0


def config_from_official(state: dict[str, Tensor], opt: argparse.Namespace) -> ModelConfig:
    """Model sizes of an official hierarchical checkpoint (shapes, plus heads from ``opt``)."""
    if not getattr(opt, "hier", True):
        raise ValueError("only hierarchical checkpoints (opt.hier=True) can be imported")
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
    pe = state.get("decoder.pos_emb.pe")
    return ModelConfig(
        d_model=state["encoder.embeddings.weight"].size(1),
        heads=int(opt.heads),
        ff_size=state["encoder.transformer_layers.0.feed_forward.w_1.weight"].size(0),
        encoder_layers=_layer_count(state, "encoder"),
        inter_layers=inter_layers,
        inter_heads=inter_heads,
        decoder_layers=_layer_count(state, "decoder"),
        dropout=0.0,
        max_positions=5000 if pe is None else pe.size(1),
    )


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
    """Load an official hierarchical hiersumm checkpoint file as a :class:`HierSum` in eval mode."""
    with torch.serialization.safe_globals([argparse.Namespace]):
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    try:
        return hiersum_from_official(checkpoint, pad_id=pad_id, bos_id=bos_id, eos_id=eos_id)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


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
