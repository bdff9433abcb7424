"""What a summarizer checkpoint carries besides its weights, read the same way from a checkpoint file
(:mod:`~hiersum.checkpoints.io`) and a model directory (:mod:`~hiersum.checkpoints.directory`): the data settings,
the tokenizer, and :class:`TrainedNetwork`, the network with both.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from hiersum.checkpoints.kinds import SUMMARIZER, CheckpointError, CheckpointKind, one_line
from hiersum.config import DataConfig, DecodeConfig, ModelConfig
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.model.summarizer import HierSum

CHECKPOINT_EXTRA_KEY = "hiersum"
"""Key of the checkpoint entry that holds hiersum's own data (the tokenizer)."""
NO_TOKENIZER_HINT = "import it again with hiersum import-hiersumm --tokenizer SPM_MODEL_OR_TOKENIZER_JSON"
"""What to do with a checkpoint that carries no tokenizer (an official one imported without it)."""


def checkpoint_tokenizer_json(checkpoint: dict[str, Any]) -> str | None:
    """The serialized tokenizer a checkpoint carries, or None."""
    return checkpoint.get(CHECKPOINT_EXTRA_KEY, {}).get("tokenizer_json")


def tokenizer_from_json(tokenizer_json: str | None) -> SubwordTokenizer:
    """The tokenizer of a checkpoint; ``ValueError`` naming the fix when it carries none, or saying why the
    one it carries does not load (the ``tokenizers`` library raises a bare ``Exception``)."""
    if not tokenizer_json:
        raise ValueError(f"this checkpoint carries no tokenizer; {NO_TOKENIZER_HINT}")
    try:
        return SubwordTokenizer.from_str(tokenizer_json)
    except Exception as error:  # tokenizers' parse errors are plain Exceptions
        raise ValueError(f"the checkpoint's tokenizer (hiersum.tokenizer_json) does not load: {one_line(error)}"
                         ) from error


def data_config_from_hparams(hparams: Mapping[str, Any]) -> DataConfig | None:
    """The data settings a checkpoint records, or None."""
    data = hparams.get("data")
    return DataConfig(**data) if data else None


def decode_config_from_hparams(hparams: Mapping[str, Any]) -> DecodeConfig | None:
    """The search settings of the run that wrote a checkpoint (an experiment's ``decode``), or None (a checkpoint
    of an earlier version, or of another tool)."""
    decode = hparams.get("decode")
    return DecodeConfig(**decode) if decode else None


def effective_decode_config(trained: DecodeConfig | None, given: DecodeConfig,
                            decode_given: Collection[str]) -> DecodeConfig:
    """The search settings the checkpoint's training run used (``trained``: an experiment's, e.g. trigram blocking
    and 55 to 120 tokens for CNN/DailyMail), with the fields named in ``decode_given`` (those the command line gave,
    ``decode.<field>=`` with ``decode=<preset>`` giving them all, or the Python call's keywords) taken from
    ``given``; ``given`` alone where the checkpoint records none. What evaluate, summarize, serve and the Python
    call decode with."""
    if trained is None:
        return given.check_lengths()
    return replace(trained, **{name: getattr(given, name) for name in decode_given}).check_lengths()


@dataclass
class TrainedNetwork:
    """A trained network with what decoding needs from its checkpoint."""

    model: HierSum
    """The network, in eval mode."""
    data_config: DataConfig | None
    """The data settings it was trained with (paragraph selection), when recorded."""
    tokenizer_json: str | None
    decode_config: DecodeConfig | None = None
    """The search settings of its training run, when recorded: the defaults of every front end that decodes with it
    (:func:`effective_decode_config`)."""

    @property
    def model_config(self) -> ModelConfig:
        return self.model.config

    @cached_property
    def tokenizer(self) -> SubwordTokenizer:
        """The tokenizer it carries, parsed on first use; ``ValueError`` when it carries none or one that does not
        load (:func:`tokenizer_from_json`; :func:`checkpoint_tokenizer` names the file)."""
        return tokenizer_from_json(self.tokenizer_json)


def checkpoint_tokenizer(source: TrainedNetwork | Mapping[str, Any], path: str | Path,
                         kind: CheckpointKind = SUMMARIZER) -> SubwordTokenizer:
    """The tokenizer that ``source`` (a loaded :class:`TrainedNetwork`, or the dict of a checkpoint file) carries,
    for the commands: none, or one that does not load, raises :class:`CheckpointError` (a usage error) naming
    ``path`` and what a file of ``kind`` is expected to be."""
    tokenizer_json = source.tokenizer_json if isinstance(source, TrainedNetwork) else checkpoint_tokenizer_json(source)
    if not tokenizer_json:
        raise CheckpointError(path, "carries no tokenizer", kind.expected, NO_TOKENIZER_HINT)
    try:
        return source.tokenizer if isinstance(source, TrainedNetwork) else tokenizer_from_json(tokenizer_json)
    except ValueError as error:
        raise CheckpointError(path, f"its tokenizer ('hiersum.tokenizer_json') does not load "
                                    f"({one_line(error.__cause__ or error)})", kind.expected) from error
