"""The config of ``hiersum train``: the groups a training run composes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hiersum.config.checks import MISSING, check
from hiersum.config.data import DataConfig, TokenizerConfig
from hiersum.config.decode import DecodeConfig
from hiersum.config.model import ModelConfig
from hiersum.config.optim import OptimConfig
from hiersum.config.trainer import TrainerConfig


@dataclass
class TrainConfig:
    """``conf/train.yaml`` (``hiersum train``): its top-level keys, whose values the YAML gives, and its
    groups. ``trainer``, ``callbacks`` and ``logger`` are ``_target_`` nodes for ``hydra.utils.instantiate``."""

    task_name: str = MISSING
    """The run directory's task folder (``outputs/<task_name>/...``); ``train``."""
    seed: int = MISSING
    """Seed of every random generator (``pytorch_lightning.seed_everything``, DataLoader workers included)."""
    eval_split: str | None = MISSING
    """After fitting, decode and score this split with the best checkpoint (None: skip)."""
    ckpt_path: str | None = MISSING
    """Resume from this checkpoint; ``last``: the newest checkpoint of the run directory (a fresh start
    when it has none). None: a fresh run, except in a job of torchrun or SLURM, where it means ``last``
    (:mod:`hiersum.training.launchers`: a restarted or requeued job resumes by itself)."""
    init_from: str | None = None
    """Fine-tune: a new run that starts from the network of this checkpoint (a ``.ckpt``) or model directory of
    ``hiersum export``: its weights, its model settings (``model.*`` given on the command line apply on top; one
    that changes the network's shape is refused, one that adds parts, e.g. ``model.copy_attention=true``, starts
    them fresh) and its tokenizer. The data, optimizer, schedule and steps are this run's, from step 0
    (:mod:`hiersum.training.init_from`). Not with a ``ckpt_path`` file, which resumes a run; with
    ``ckpt_path=last``, the run continues from its own newest checkpoint when it has one (a stopped fine-tuning run's
    resume command). None: a network of ``model`` with fresh weights."""
    checkpoint_every_n_steps: int | None = 200
    """A checkpoint (and ``last.ckpt``) every N training steps, whatever the validation says; None: none
    between validations. What a killed or restarted run loses at most."""
    ddp_timeout: float = 600.0
    """Seconds a DDP collective waits for a rank (the strategy's ``timeout``, ``trainer=ddp``): a rank that
    died ends the job within about this time."""
    compile: bool = False
    """Compile the model's repeated blocks in place (:meth:`hiersum.model.HierSum.compile`). Off by default: on
    a CPU it gains nothing (docs/benchmarks.md, "Compiling") and its first steps cost compile time."""
    activation_checkpointing: bool = False
    """Recompute the encoder's activations in the backward pass instead of keeping them
    (:meth:`hiersum.model.HierSum.recompute_encoder`): for records of hundreds of thousands of tokens, whose
    training step would not fit otherwise; about one more encoder forward a step."""
    dry_run: bool = False
    """Print the memory a training step of this config needs (parameters, optimizer state, the step's peak; fp32
    and bf16, for GPUs of 16-80 GB) and stop, training nothing (:mod:`hiersum.training.dry_run`)."""
    model: ModelConfig = MISSING
    """The summarizer's sizes and encoder (``model=small|tiny|paper|flat|pretrained...``)."""
    tokenizer: TokenizerConfig = MISSING
    """The subword tokenizer, loaded or trained on the train split."""
    data: DataConfig = MISSING
    """The corpus and how an example becomes a [P, T] grid."""
    optim: OptimConfig = MISSING
    """The optimizer and its learning-rate schedule."""
    decode: DecodeConfig = MISSING
    """The beam search of the evaluation after fitting."""
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    """``pytorch_lightning.Trainer``'s arguments with its ``_target_`` (``trainer=cpu|gpu|ddp``). Not MISSING: a
    MISSING node whose schema has ``Union`` fields fails OmegaConf's merge of the group (an AssertionError)."""
    callbacks: dict[str, Any] = field(default_factory=dict)
    """Lightning callbacks by name, each a ``_target_`` node (null or without ``_target_``: left out)."""
    logger: dict[str, Any] = field(default_factory=dict)
    """Lightning loggers by name, each a ``_target_`` node (null or without ``_target_``: left out)."""
    paths: dict[str, Any] = MISSING
    """``output_dir`` (the run directory) and the project's folders (``conf/paths/default.yaml``)."""

    def __post_init__(self) -> None:
        steps = self.checkpoint_every_n_steps
        check(steps is None or steps >= 1, "checkpoint_every_n_steps", "null or a step count >= 1", steps)
        check(self.ddp_timeout > 0, "ddp_timeout", "seconds > 0", self.ddp_timeout)
        if isinstance(self.decode, DecodeConfig):  # MISSING until composed
            self.decode.check_lengths()
        if self.init_from is not None and self.ckpt_path not in (None, "last"):
            raise ValueError(f"init_from={self.init_from} and ckpt_path={self.ckpt_path} are exclusive: ckpt_path "
                             "resumes a run (its weights, optimizer, step and data position), init_from starts a new "
                             "run from a trained network; give one of them (or ckpt_path=last: continue this "
                             "fine-tuning run from its own newest checkpoint)")
