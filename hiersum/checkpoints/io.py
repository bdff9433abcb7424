"""hiersum checkpoint files: reading them safely, and the model and tokenizer they carry.

A checkpoint is what Lightning's ``ModelCheckpoint`` saves for a
:class:`hiersum.training.module.HierSumModule` (or what ``hiersum import-hiersumm`` writes in the same
format): ``hyper_parameters`` (the module's keyword arguments: model, optim and data configs as
dicts, vocabulary size, special ids), ``state_dict`` (the network under ``model.``) and
``hiersum.tokenizer_json``. :func:`load_summarizer` rebuilds the network alone, without
importing Lightning, for the summarization script; training and evaluation use
:func:`hiersum.training.module.load_checkpoint`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from hiersum.config import DataConfig, ModelConfig
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.model.summarizer import HierSum

CHECKPOINT_EXTRA_KEY = "hiersum"
"""Key of the checkpoint entry that holds hiersum's own data (the tokenizer)."""
MODEL_PREFIX = "model."
"""Prefix of the network's parameters in the checkpoint's ``state_dict``."""


def read_checkpoint(path: str | Path, *, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """The checkpoint dict, loaded with ``weights_only=True``.

    Raises ``FileNotFoundError`` / ``ValueError`` naming the path when the file is missing or is
    not a hiersum checkpoint.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    checkpoint = torch.load(path, map_location=map_location, weights_only=True)
    if not isinstance(checkpoint, dict) or "state_dict" not in checkpoint or "hyper_parameters" not in checkpoint:
        raise ValueError(f"{path}: expected a hiersum checkpoint with 'state_dict' and 'hyper_parameters'")
    return checkpoint


def checkpoint_tokenizer_json(checkpoint: dict[str, Any]) -> str | None:
    """The serialized tokenizer a checkpoint carries, or None."""
    return checkpoint.get(CHECKPOINT_EXTRA_KEY, {}).get("tokenizer_json")


def tokenizer_from_json(tokenizer_json: str | None) -> SubwordTokenizer:
    """The tokenizer of a checkpoint; ``ValueError`` naming the fix when it carries none."""
    if not tokenizer_json:
        raise ValueError(
            "this checkpoint carries no tokenizer; import it again with "
            "hiersum import-hiersumm --tokenizer SPM_MODEL_OR_TOKENIZER_JSON"
        )
    return SubwordTokenizer.from_str(tokenizer_json)


def network_from_hparams(hparams: Mapping[str, Any], *, pretrained_weights: bool = True) -> HierSum:
    """A freshly initialised network of the sizes and special ids a checkpoint records.

    ``pretrained_weights=False``: a pretrained encoder (``model.encoder=pretrained``) is built from the encoder config
    the checkpoint records, without reading ``model.pretrained_encoder`` (the directory may be gone): its weights
    come from the checkpoint's state dict; and without a paragraph state cache (``model.pretrained_cache_states``
    pays off over training epochs; a loaded network encodes each input once, so a cache would only grow).
    """
    config = ModelConfig(**hparams["model"])
    if not pretrained_weights and config.pretrained_config_json is not None:
        config = replace(config, pretrained_encoder=None, pretrained_cache_states=False)
    return HierSum(
        config, vocab_size=hparams["vocab_size"],
        pad_id=hparams["pad_id"], bos_id=hparams["bos_id"], eos_id=hparams["eos_id"],
    )


def data_config_from_hparams(hparams: Mapping[str, Any]) -> DataConfig | None:
    """The data settings a checkpoint records, or None."""
    data = hparams.get("data")
    return DataConfig(**data) if data else None


@dataclass
class Summarizer:
    """A trained network with what decoding needs from its checkpoint."""

    model: HierSum
    """The network, in eval mode."""
    data_config: DataConfig | None
    """The data settings it was trained with (paragraph selection), when recorded."""
    tokenizer_json: str | None

    @property
    def model_config(self) -> ModelConfig:
        return self.model.config

    def tokenizer(self) -> SubwordTokenizer:
        return tokenizer_from_json(self.tokenizer_json)


def load_summarizer(path: str | Path, *, map_location: str | torch.device = "cpu") -> Summarizer:
    """The network of a hiersum checkpoint (``weights_only=True``), without Lightning.

    Raises as :func:`read_checkpoint`; a state dict that does not fit the recorded sizes raises
    ``RuntimeError`` (from ``load_state_dict``).
    """
    checkpoint = read_checkpoint(path, map_location=map_location)
    hparams = checkpoint["hyper_parameters"]
    model = network_from_hparams(hparams, pretrained_weights=False)
    weights = {
        name[len(MODEL_PREFIX):]: tensor
        for name, tensor in checkpoint["state_dict"].items() if name.startswith(MODEL_PREFIX)
    }
    model.load_state_dict(weights)
    return Summarizer(
        model=model.eval(), data_config=data_config_from_hparams(hparams),
        tokenizer_json=checkpoint_tokenizer_json(checkpoint),
    )
