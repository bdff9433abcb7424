"""``hiersum train init_from=CKPT_OR_DIR``: a new run that starts from a trained network (fine-tuning).

The run takes three things from the checkpoint or model directory, read as every command reads one
(:func:`hiersum.checkpoints.io.load_network`: ``torch.load(weights_only=True)``, or safetensors and JSON): the
network's weights, its model settings and its tokenizer. The rest is the new run's: the data, the optimizer and
its schedule, the steps (from step 0, the data from its first batch). ``ckpt_path=FILE`` resumes a run instead; the
two are exclusive (:class:`hiersum.config.TrainConfig`). A fine-tuning run that has a checkpoint of its own continues
from it, with the same model settings (:func:`fine_tuning`), under ``ckpt_path=last`` (what a stopped run's resume
command gives) or as a restarted torchrun or requeued SLURM job.

The model settings are the checkpoint's, with the ``model.*`` options of the command line and of its experiment file
on top (:func:`fine_tuned_model_config`; ``model=PRESET`` on the command line gives all of them, an experiment's
``override /model:`` none: :func:`hiersum.cli.overrides.experiment_model_fields`). Each field of
:class:`~hiersum.config.ModelConfig` is of one of three kinds (:mod:`hiersum.config.model_fields`):

- ``SHAPE_FIELDS`` describe the network the weights are for (its widths, heads and layers, its encoder and
  decoder, how its embeddings are built): another value than the checkpoint's is refused, in one line;
- ``PART_FIELDS`` switch on a part with weights of its own (``copy_attention``, ``coverage``, a paragraph
  ``graph``): switched on for a network trained without it, the part starts fresh (as a new network's would), and
  one log line names its weights; switched off, or changed, for a network trained with it: refused (its trained
  weights would be dropped);
- ``FREE_FIELDS`` change how the network trains, not what it is (dropout, the weights of the loss terms, what
  is frozen, the length of the sinusoid position tables, copying out-of-vocabulary words): the command line's value
  is taken.

The tokenizer is the checkpoint's: a ``tokenizer.*`` option on the command line is refused.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import torch

from hiersum.checkpoints.contents import TrainedNetwork, checkpoint_tokenizer
from hiersum.checkpoints.io import load_network, weights_problem
from hiersum.checkpoints.kinds import INIT_FROM, CheckpointError
from hiersum.config import ModelConfig, TrainConfig
from hiersum.config.model_fields import PART_FIELDS, SHAPE_FIELDS
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.errors import UsageError
from hiersum.inference.resumable_output import checkpoint_sha256
from hiersum.model.summarizer import HierSum

log = logging.getLogger(__name__)

SHOWN_NAMES = 6
"""The fresh weights named in the log line of added parts (the others counted)."""


@dataclass(frozen=True)
class StartingPoint:
    """The trained network a fine-tuning run starts from."""

    path: Path
    """``init_from``: a checkpoint file or a model directory."""
    network: TrainedNetwork

    @cached_property
    def tokenizer(self) -> SubwordTokenizer:
        """The tokenizer the network carries (one it lacks, or one that does not load: :class:`CheckpointError`)."""
        return checkpoint_tokenizer(self.network, self.path, INIT_FROM)

    def record(self) -> dict[str, str]:
        """What the run records of its start (``init_from`` in ``metrics.json`` and in the ``hiersum`` entry of its
        checkpoints): the absolute path and its SHA-256 (a directory's: of its files,
        :func:`hiersum.inference.resumable_output.checkpoint_sha256`)."""
        return {"path": str(self.path.absolute()), "sha256": checkpoint_sha256(self.path)}


def read_starting_point(path: str | Path) -> StartingPoint:
    """The network, settings and tokenizer of ``init_from``: a checkpoint file or a model directory. Anything that is
    not one, or carries no tokenizer, raises a one-line :class:`CheckpointError` naming the file."""
    path = Path(path)
    try:
        start = StartingPoint(path, load_network(path))
        start.tokenizer  # noqa: B018  (parsed now: a checkpoint without a tokenizer is refused before the data)
    except CheckpointError as error:
        hint = (f"a run directory: give init_from={path / 'checkpoints' / 'last.ckpt'} or another of its checkpoints"
                if (path / "checkpoints").is_dir() else error.hint)
        raise CheckpointError(error.path, error.found, INIT_FROM.expected, hint) from error
    return start


def fine_tuned_model_config(trained: ModelConfig, given: ModelConfig, model_given: Collection[str], *,
                            source: str | Path) -> ModelConfig:
    """``trained`` (the checkpoint's settings) with the fields named in ``model_given`` (those the command line
    gave) taken from ``given``. A :data:`SHAPE_FIELDS` field that differs, or a :data:`PART_FIELDS` field that
    differs where ``trained`` has the part, raises a one-line :class:`UsageError` naming each; so does a
    combination that :class:`ModelConfig` refuses."""
    changed = {name: getattr(given, name) for name in model_given if getattr(given, name) != getattr(trained, name)}
    refused = [name for name in changed
               if name in SHAPE_FIELDS or (name in PART_FIELDS and getattr(trained, name) != PART_FIELDS[name])]
    if refused:
        found = ", ".join(f"model.{name}={shown(changed[name])} (the checkpoint's: {shown(getattr(trained, name))})"
                          for name in refused)
        raise UsageError(f"init_from={source}: {found} would change the network the checkpoint holds; expected its "
                         f"model settings: leave {'these options' if len(refused) > 1 else 'the option'} out of the "
                         "command line and the experiment file, or train a new network without init_from")
    try:
        return replace(trained, **changed)
    except ValueError as error:  # ModelConfig's checks, e.g. coverage without copy_attention
        raise UsageError(f"init_from={source}: {error}") from None


def shown(value: Any) -> str:
    """A setting's value as the command line writes it (``true``, ``null``, ``[1, 2]``, ``similarity``)."""
    return json.dumps(value) if isinstance(value, bool) or value is None else str(value)


def added_parts(trained: ModelConfig, config: ModelConfig) -> list[str]:
    """The :data:`PART_FIELDS` that ``config`` switches on and ``trained`` lacks."""
    return [name for name, off in PART_FIELDS.items() if getattr(trained, name) == off != getattr(config, name)]


def fine_tuning(cfg: TrainConfig, resumed: Mapping[str, Any] | None, model_given: Collection[str] = (),
                tokenizer_given: Collection[str] = (), *, start: StartingPoint | None = None,
                ) -> tuple[TrainConfig, StartingPoint | None]:
    """``cfg`` with the model settings a run of ``cfg.init_from`` trains (:func:`fine_tuned_model_config`), and
    the starting point whose weights it loads; ``(cfg, None)`` without ``init_from``. ``resumed``: the run's own
    checkpoint when the run continues from it (``ckpt_path=last``, a restarted job: its settings are the base, its
    weights are loaded by the resume, the starting point is not read again). ``model_given``, ``tokenizer_given``:
    the fields of those groups the command line gave (:func:`hiersum.cli.overrides.given_fields`); a ``tokenizer``
    one is refused. ``start``: ``cfg.init_from`` already read (``hiersum train`` reads it before typing its config),
    else it is read here."""
    if cfg.init_from is None:
        return cfg, None
    if tokenizer_given:
        options = ", ".join(f"tokenizer.{name}" for name in sorted(tokenizer_given))
        raise UsageError(f"init_from={cfg.init_from}: the tokenizer is the checkpoint's; {options} does not apply "
                         "(leave it out)")
    if resumed is not None:
        start = None
    elif start is None:
        start = read_starting_point(cfg.init_from)
    trained = ModelConfig(**resumed["hyper_parameters"]["model"]) if start is None else start.network.model_config
    model = fine_tuned_model_config(trained, cfg.model, model_given, source=cfg.init_from)
    return replace(cfg, model=model), start


def dry_run_config(cfg: TrainConfig, model_given: Collection[str] = (), tokenizer_given: Collection[str] = (),
                   *, start: StartingPoint | None = None) -> TrainConfig:
    """``cfg`` as ``dry_run=true`` measures it (:mod:`hiersum.training.dry_run`): with ``init_from``, the settings of
    :func:`fine_tuning` and the trained network's vocabulary (``tokenizer.vocab_size``, the size the dry run builds
    the embeddings with: the run's tokenizer is the checkpoint's)."""
    cfg, start = fine_tuning(cfg, None, model_given, tokenizer_given, start=start)
    if start is None:
        return cfg
    return replace(cfg, tokenizer=replace(cfg.tokenizer, vocab_size=start.network.model.vocab_size))


def load_starting_weights(network: HierSum, start: StartingPoint) -> list[str]:
    """Copy ``start``'s weights into ``network`` (built from the settings of :func:`fine_tuning`, its parts already
    initialised); the weights ``start`` lacks, those of the parts the run adds (:func:`added_parts`), keep their
    fresh values and are named in one log line. Returns their names. Weights that do not fit otherwise raise a
    one-line :class:`CheckpointError`."""
    weights = start.network.model.state_dict()
    target = network.state_dict()
    parts = added_parts(start.network.model_config, network.config)
    fresh = [name for name in target if name not in weights] if parts else []
    problem = weights_problem({name: tensor for name, tensor in target.items() if name not in fresh}, weights)
    if problem:
        raise CheckpointError(start.path, problem, INIT_FROM.expected)
    with torch.no_grad():
        network.load_state_dict(weights, strict=not fresh)
    if parts:
        options = ", ".join(f"model.{name}={shown(getattr(network.config, name))}" for name in parts)
        named = ", ".join(fresh[:SHOWN_NAMES]) + (f" and {len(fresh) - SHOWN_NAMES} more" if len(fresh) > SHOWN_NAMES
                                                  else "")
        count = sum(target[name].numel() for name in fresh)
        log.info("init_from=%s: %s adds parts the checkpoint lacks, which start fresh: %d weights (%s parameters): %s",
                 start.path, options, len(fresh), f"{count:,}", named)
    return fresh
