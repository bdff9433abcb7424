"""The OmegaConf resolvers hiersum's configs use, registered by the entry points before any composition."""

from __future__ import annotations

from pathlib import PurePath

from omegaconf import OmegaConf

from hiersum.data import sample_location
from hiersum.training import cpu_precision, launchers


def dir_name(path: str) -> str:
    """The last part of ``path``: ``${hiersum.dir_name:${paths.output_dir}}``, a run's name in a tracker."""
    return PurePath(path).name


RESOLVERS = {
    sample_location.RESOLVER: sample_location.sample_dir,
    launchers.RESOLVER: launchers.run_name,
    "hiersum.dir_name": dir_name,
    cpu_precision.RESOLVER: cpu_precision.cpu_precision,
}
"""``${hiersum.sample_dir:DATA_DIR}`` of ``conf/data/sample.yaml`` (the sample corpus, or its cached copy),
``${hiersum.run_name:DEFAULT}`` of ``conf/hydra/train.yaml`` (one run directory per torchrun or SLURM job) and
``${hiersum.dir_name:PATH}`` of ``conf/logger/mlflow.yaml`` and ``wandb.yaml`` (the run directory's name) and
``${hiersum.cpu_precision:}`` of ``conf/experiment/cnndm_cpu.yaml`` (``bf16-mixed`` on a CPU with bf16 matrix
instructions, else ``32-true``)."""


def register_resolvers() -> None:
    """Register :data:`RESOLVERS` with OmegaConf (idempotent)."""
    for name, resolver in RESOLVERS.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, resolver)
