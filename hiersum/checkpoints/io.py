"""hiersum checkpoint files: reading them safely, and the model and tokenizer they carry.

A checkpoint is what Lightning's ``ModelCheckpoint`` saves for a
:class:`hiersum.training.module.HierSumModule` (or what ``hiersum import-hiersumm`` writes in the same
format): ``hyper_parameters`` (the module's keyword arguments: model, optim and data configs as
dicts, vocabulary size, special ids), ``state_dict`` (the network under ``model.``) and
``hiersum.tokenizer_json``. :func:`load_network` rebuilds the network alone, without
importing Lightning, for the commands and the Python API.

Every checkpoint hiersum reads (a summarizer, a ranker, an official hiersumm checkpoint, one to resume
training from) goes through :func:`load_checkpoint_file` (``torch.load(weights_only=True)``); any failure to
read a file as the checkpoint expected raises :class:`CheckpointError`, in one line naming the file, what it
is and what was expected.

Below this module: :mod:`~hiersum.checkpoints.kinds` (the kinds of checkpoint and the error),
:mod:`~hiersum.checkpoints.contents` (what a checkpoint carries: :class:`TrainedNetwork`, its tokenizer and data
settings) and :mod:`~hiersum.checkpoints.directory` (model directories, which :func:`load_network` also reads).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from hiersum.checkpoints.contents import (
    CHECKPOINT_EXTRA_KEY,
    TrainedNetwork,
    checkpoint_tokenizer_json,
    data_config_from_hparams,
    decode_config_from_hparams,
)
from hiersum.checkpoints.directory import load_model_directory
from hiersum.checkpoints.kinds import (
    OFFICIAL,
    RANKER,
    RESUME,
    SUMMARIZER,
    CheckpointError,
    CheckpointKind,
    rebuilding,
)
from hiersum.config import ModelConfig
from hiersum.data.torch_files import describe_object, load_torch_file
from hiersum.model.hub import portable_config
from hiersum.model.summarizer import HierSum

MODEL_PREFIX = "model."
"""Prefix of the network's parameters in the checkpoint's ``state_dict``."""


RANKER_FORMAT = "hiersum-ranker"
"""Value of the ``format`` entry of a ranker checkpoint."""
RESUME_KEYS = ("epoch", "global_step", "optimizer_states")
"""Entries of a training checkpoint that an evaluation checkpoint (averaged, imported) lacks."""
SAFE_GLOBALS = (argparse.Namespace,)
"""What ``weights_only`` loading may build besides tensors and plain values: the ``opt`` of an official checkpoint."""


def checkpoint_kind(value: Any) -> CheckpointKind | None:
    """The kind of checkpoint a loaded file holds (by its entries), or None."""
    if not isinstance(value, dict):
        return None
    if value.get("format") == RANKER_FORMAT:
        return RANKER
    if "state_dict" in value and "hyper_parameters" in value:
        return SUMMARIZER
    if "model" in value and "opt" in value:
        return OFFICIAL
    return None


def load_checkpoint_file(path: str | Path, kind: CheckpointKind = SUMMARIZER, *,
                         map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """The one way hiersum reads a checkpoint of any ``kind``: ``torch.load(weights_only=True)``, then the
    check that the file holds that kind. Any failure raises :class:`CheckpointError`."""
    value = load_torch_file(path, expected=kind.expected, error=CheckpointError, map_location=map_location,
                            safe_globals=SAFE_GLOBALS, noun=kind.noun)
    found = checkpoint_kind(value)
    if found is None:
        raise CheckpointError(path, f"holds {describe_object(value)}, not {kind.name}", kind.expected)
    if found.name != kind.name:
        raise CheckpointError(path, f"holds {found.name}", kind.expected, found.hint.format(path=path))
    return value


def read_checkpoint(path: str | Path, *, map_location: str | torch.device = "cpu",
                    kind: CheckpointKind = SUMMARIZER) -> dict[str, Any]:
    """The dict of a hiersum checkpoint (:func:`load_checkpoint_file`), its entries checked: ``state_dict`` a
    dict of tensors, ``hyper_parameters`` a dict, ``hiersum`` a dict. Any failure raises :class:`CheckpointError`."""
    checkpoint = load_checkpoint_file(path, kind, map_location=map_location)
    problem = entries_problem(checkpoint)
    if problem:
        raise CheckpointError(path, problem, kind.expected)
    return checkpoint


def entries_problem(checkpoint: dict[str, Any]) -> str | None:
    """What is wrong with the entries of a summarizer checkpoint, or None."""
    for key in ("state_dict", "hyper_parameters", CHECKPOINT_EXTRA_KEY):
        if not isinstance(checkpoint.get(key, {}), dict):
            return f"its {key!r} is {describe_object(checkpoint[key])}, not a dict"
    for name, value in checkpoint["state_dict"].items():
        if not isinstance(value, torch.Tensor):
            return f"its 'state_dict' entry {name!r} is {describe_object(value)}, not a tensor"
    tokenizer_json = checkpoint.get(CHECKPOINT_EXTRA_KEY, {}).get("tokenizer_json")
    if tokenizer_json is not None and not isinstance(tokenizer_json, str):
        return f"its tokenizer ('hiersum.tokenizer_json') is {describe_object(tokenizer_json)}, not a string"
    return None


def read_training_checkpoint(path: str | Path) -> dict[str, Any]:
    """A checkpoint to resume training from (``hiersum train ckpt_path=``): :func:`read_checkpoint`, holding
    the optimizer states and the loop counters (:data:`RESUME_KEYS`)."""
    checkpoint = read_checkpoint(path, kind=RESUME)
    missing = [key for key in RESUME_KEYS if key not in checkpoint]
    if missing:
        raise CheckpointError(path, f"is an evaluation checkpoint (no {', '.join(map(repr, missing))}: averaged, "
                                    "imported or saved with save_weights_only)", RESUME.expected, SUMMARIZER.hint)
    return checkpoint


def weights_problem(expected: Mapping[str, torch.Tensor], found: Mapping[str, Any]) -> str | None:
    """How the weights ``found`` do not fit a network whose state dict is ``expected``, or None."""
    missing = [name for name in expected if name not in found]
    unexpected = [name for name in found if name not in expected]
    other = [name for name in expected if name in found and (
        not isinstance(found[name], torch.Tensor) or found[name].shape != expected[name].shape)]
    if not (missing or unexpected or other):
        return None
    parts = [f"{len(missing)} missing (e.g. {missing[0]!r})"] if missing else []
    parts += [f"{len(unexpected)} unexpected (e.g. {unexpected[0]!r})"] if unexpected else []
    if other:
        name = other[0]
        shape = list(found[name].shape) if isinstance(found[name], torch.Tensor) else type(found[name]).__name__
        parts.append(f"{len(other)} of another shape (e.g. {name!r}: {shape} in the file, "
                     f"{list(expected[name].shape)} in the model)")
    return f"its weights do not fit the model its settings describe: {', '.join(parts)}"


def check_weights(path: str | Path, network: torch.nn.Module, weights: Mapping[str, Any],
                  kind: CheckpointKind) -> None:
    """Raise a :class:`CheckpointError` when ``weights`` do not fit ``network`` (:func:`weights_problem`)."""
    problem = weights_problem(network.state_dict(), weights)
    if problem:
        raise CheckpointError(path, problem, kind.expected)


def load_weights(path: str | Path, network: torch.nn.Module, weights: Mapping[str, Any],
                 kind: CheckpointKind) -> None:
    """``network.load_state_dict(weights)``, a mismatch raising a one-line :class:`CheckpointError`."""
    check_weights(path, network, weights, kind)
    with rebuilding(path, kind, "weights"):
        network.load_state_dict(weights)

def network_from_hparams(hparams: Mapping[str, Any], *, pretrained_weights: bool = True) -> HierSum:
    """A freshly initialised network of the sizes and special ids a checkpoint records.

    ``pretrained_weights=False``: a pretrained encoder (``model.encoder=pretrained``) is built from the encoder config
    the checkpoint records, without reading ``model.pretrained_encoder`` (the directory may be gone): its weights
    come from the checkpoint's state dict; and without a paragraph state cache (``model.pretrained_cache_states``
    pays off over training epochs; a loaded network encodes each input once, so a cache would only grow).
    """
    config = ModelConfig(**hparams["model"])
    if not pretrained_weights:
        config = portable_config(config)
    return HierSum(
        config, vocab_size=hparams["vocab_size"],
        pad_id=hparams["pad_id"], bos_id=hparams["bos_id"], eos_id=hparams["eos_id"],
        separator_id=hparams.get("separator_id"), unk_id=hparams.get("unk_id"),
    )


def load_network(path: str | Path, *, map_location: str | torch.device = "cpu") -> TrainedNetwork:
    """The network of a hiersum checkpoint (``weights_only=True``) or of a model directory of ``hiersum export``
    (safetensors and JSON only: :func:`hiersum.checkpoints.directory.load_model_directory`), without Lightning.
    Any failure to read it as either raises :class:`CheckpointError` (see :func:`read_checkpoint`)."""
    if Path(path).is_dir():
        return load_model_directory(path, map_location=map_location)
    checkpoint = read_checkpoint(path, map_location=map_location)
    hparams = checkpoint["hyper_parameters"]
    with rebuilding(path, SUMMARIZER, "'hyper_parameters'"):
        model = network_from_hparams(hparams, pretrained_weights=False)
        data_config = data_config_from_hparams(hparams)
        decode_config = decode_config_from_hparams(hparams)
    weights = {
        name[len(MODEL_PREFIX):]: tensor
        for name, tensor in checkpoint["state_dict"].items() if name.startswith(MODEL_PREFIX)
    }
    load_weights(path, model, weights, SUMMARIZER)
    return TrainedNetwork(model=model.eval(), data_config=data_config,
                          tokenizer_json=checkpoint_tokenizer_json(checkpoint), decode_config=decode_config)
