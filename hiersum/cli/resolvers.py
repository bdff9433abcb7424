"""The OmegaConf resolvers hiersum's configs use, registered by the entry points before any composition."""

from __future__ import annotations

from omegaconf import OmegaConf

from hiersum.data import sample_location
from hiersum.training import launchers

RESOLVERS = {
    sample_location.RESOLVER: sample_location.sample_dir,
    launchers.RESOLVER: launchers.run_name,
}
"""``${hiersum.sample_dir:DATA_DIR}`` of ``conf/data/sample.yaml`` (the sample corpus, or its cached copy) and
``${hiersum.run_name:DEFAULT}`` of ``conf/hydra/train.yaml`` (one run directory per torchrun or SLURM job)."""


def register_resolvers() -> None:
    """Register :data:`RESOLVERS` with OmegaConf (idempotent)."""
    for name, resolver in RESOLVERS.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, resolver)
