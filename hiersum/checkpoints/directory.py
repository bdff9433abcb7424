"""Model directories (``hiersum export``): a summarizer as the files Hugging Face users exchange, never a pickle.

A model directory holds:

``model.safetensors``
    The network's weights (safetensors; the tied embedding table once), :mod:`hiersum.model.hub`.
``config.json``
    ``HierSum``'s arguments (``config``: the :class:`~hiersum.config.ModelConfig`; ``vocab_size``, ``pad_id``,
    ``bos_id``, ``eos_id``, ``separator_id``, ``unk_id``), the data settings the checkpoint recorded (``data``: its
    paragraph selection, which ``hiersum summarize`` and ``hiersum evaluate`` apply as with the checkpoint) and
    ``hiersum_version``.
``tokenizer.json``
    The tokenizer the checkpoint carries, byte for byte (a ``tokenizers`` JSON; an official SentencePiece model
    imported by ``hiersum import-hiersumm`` is carried as its equivalent Unigram tokenizer).
``generation_config.json``
    The decoding options of the run that made the checkpoint (:class:`~hiersum.config.DecodeConfig`).
``README.md``
    The model card.

:func:`load_model_directory` reads one back (what :func:`hiersum.checkpoints.load_network` does for a
directory) with ``safetensors`` and ``json`` only; every way a directory can be broken (a missing file, a damaged
safetensors header, a ``config.json`` without a key, a tokenizer that does not load, weights that do not fit) is one
:class:`~hiersum.checkpoints.CheckpointError` line naming the file, what it is and what was expected.
"""

from __future__ import annotations

import importlib.metadata
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open

from hiersum.checkpoints.contents import TrainedNetwork, data_config_from_hparams
from hiersum.checkpoints.kinds import SUMMARIZER, CheckpointError, CheckpointKind, check_file, one_line, rebuilding
from hiersum.config import DecodeConfig, ModelConfig
from hiersum.config.model_fields import SHAPE_FIELDS
from hiersum.model.hub import CONFIG_FILE, INIT_KEYS, OPTIONAL_INIT_KEYS, WEIGHTS_FILE
from hiersum.model.summarizer import HierSum

TOKENIZER_FILE = "tokenizer.json"
GENERATION_FILE = "generation_config.json"
CARD_FILE = "README.md"
FILES = (WEIGHTS_FILE, CONFIG_FILE, TOKENIZER_FILE, GENERATION_FILE, CARD_FILE)
"""Every file of a model directory, in the order :func:`save_model_directory` writes them."""
DATA_KEY = "data"
"""The key of ``config.json`` that holds the data settings (paragraph selection) of the checkpoint."""

DIRECTORY = CheckpointKind(
    "a hiersum model directory", "file",
    f"a model directory of hiersum export ({WEIGHTS_FILE}, {CONFIG_FILE}, {TOKENIZER_FILE})",
    "give it as checkpoint= of hiersum summarize or hiersum evaluate",
)


@dataclass(frozen=True)
class ModelNotes:
    """What a model directory says about itself beside the network: its decoding defaults and its card."""

    generation: DecodeConfig
    """The decoding options of the run that made the checkpoint (``generation_config.json``)."""
    text: str
    """The model card (``README.md``)."""


def is_model_directory(path: str | Path) -> bool:
    """``path`` is a directory meant as a model directory: it holds ``model.safetensors`` or ``config.json``."""
    path = Path(path)
    return path.is_dir() and any((path / name).exists() for name in (WEIGHTS_FILE, CONFIG_FILE))


def save_model_directory(network: TrainedNetwork, directory: str | Path, card: ModelNotes) -> Path:
    """Write every file of a model directory (module docstring) into ``directory`` (created if needed);
    ``HierSum.save_pretrained`` writes the weights and ``config.json``."""
    directory = Path(directory)
    data = asdict(network.data_config) if network.data_config is not None else None
    config = {**network.model.init_arguments(), DATA_KEY: data,
              "hiersum_version": importlib.metadata.version("hiersum")}
    (directory / CARD_FILE).parent.mkdir(parents=True, exist_ok=True)
    (directory / CARD_FILE).write_text(card.text, encoding="utf-8")  # before save_pretrained: its card is not used
    network.model.save_pretrained(directory, config=json.loads(json.dumps(config, default=str)))
    (directory / TOKENIZER_FILE).write_text(network.tokenizer_json or "", encoding="utf-8")
    generation = json.dumps(asdict(card.generation), indent=2, sort_keys=True, default=str)
    (directory / GENERATION_FILE).write_text(generation + "\n", encoding="utf-8")
    return directory


def load_model_directory(path: str | Path, *, map_location: str | torch.device = "cpu") -> TrainedNetwork:
    """The summarizer of a model directory (module docstring), its network in eval mode; nothing is unpickled.
    Any failure raises :class:`CheckpointError` naming the file."""
    path = Path(path)
    if not is_model_directory(path):
        hint = (f"a run directory: give checkpoint={path / 'checkpoints' / 'last.ckpt'}, or export it first with "
                f"hiersum export checkpoint={path} output=DIR") if (path / "checkpoints").is_dir() else None
        raise CheckpointError(path, "is a directory", SUMMARIZER.expected, hint)
    for name in (WEIGHTS_FILE, CONFIG_FILE, TOKENIZER_FILE):
        check_file(path / name, DIRECTORY)
    config = read_config(path / CONFIG_FILE)
    check_weights_file(path / WEIGHTS_FILE)
    with rebuilding(path / CONFIG_FILE, DIRECTORY, "settings"):
        data_config = data_config_from_hparams(config)
    decode_config = None
    if (path / GENERATION_FILE).is_file():  # the run's search settings, as a checkpoint records them
        with rebuilding(path / GENERATION_FILE, DIRECTORY, "decoding options"):
            decode_config = DecodeConfig(**json.loads((path / GENERATION_FILE).read_text(encoding="utf-8")))
    try:
        model = HierSum.from_pretrained(path, map_location=str(map_location))
    except (RuntimeError, ValueError, TypeError) as error:  # what load_model and the constructors raise
        raise CheckpointError(path / WEIGHTS_FILE, f"its weights do not fit the model {CONFIG_FILE} describes "
                                                   f"({one_line(error)})", DIRECTORY.expected) from error
    network = TrainedNetwork(model=model.eval(), data_config=data_config, decode_config=decode_config,
                             tokenizer_json=(path / TOKENIZER_FILE).read_text(encoding="utf-8"))
    try:
        network.tokenizer  # noqa: B018  (parsed now, once: a broken tokenizer.json is refused at load)
    except ValueError as error:
        reason = one_line(error.__cause__ or error)
        raise CheckpointError(path / TOKENIZER_FILE, f"does not load as a tokenizer ({reason})",
                              DIRECTORY.expected) from error
    return network


def read_config(path: Path) -> dict[str, Any]:
    """``config.json`` of a model directory, checked: a JSON object holding every key of :data:`INIT_KEYS` but the
    special ids a directory of an earlier version may lack (:data:`OPTIONAL_INIT_KEYS`), its ``config`` every field
    of :class:`ModelConfig` that describes the network's shape (:data:`SHAPE_FIELDS`). A field added to ModelConfig
    after the directory was written (a part its network was trained without, an option of training) takes its
    default, as a checkpoint's recorded model settings do."""
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(path, f"is not JSON ({one_line(error)})", DIRECTORY.expected) from error
    if not isinstance(config, dict):
        raise CheckpointError(path, f"holds a JSON {type(config).__name__}, not an object", DIRECTORY.expected)
    missing = [key for key in INIT_KEYS if key not in config and key not in OPTIONAL_INIT_KEYS]
    model = config.get("config")
    if not missing and not isinstance(model, dict):
        raise CheckpointError(path, f"its 'config' is a JSON {type(model).__name__}, not an object",
                              DIRECTORY.expected)
    missing += [f"config.{field.name}" for field in fields(ModelConfig)
                if not missing and field.name in SHAPE_FIELDS and field.name not in model]
    if missing:
        more = f" (and {len(missing) - 1} more keys)" if len(missing) > 1 else ""
        raise CheckpointError(path, f"has no {missing[0]!r}{more}",
                              f"{DIRECTORY.expected}, its {CONFIG_FILE} as hiersum export writes it")
    return config


def check_weights_file(path: Path) -> None:
    """Read the header of ``model.safetensors`` (names, shapes, offsets): a damaged or truncated file raises
    :class:`CheckpointError`."""
    try:
        with safe_open(str(path), framework="pt") as weights:
            weights.keys()
    except (SafetensorError, OSError) as error:
        raise CheckpointError(path, f"is not a readable safetensors file ({one_line(error)})",
                              DIRECTORY.expected) from error
