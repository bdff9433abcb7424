"""hiersum checkpoints: reading them (``weights_only=True``), the network they carry, official import, averaging."""

from hiersum.checkpoints.io import CheckpointError, TrainedNetwork, load_checkpoint_file, load_network, read_checkpoint
from hiersum.checkpoints.official import load_official_hiersumm

__all__ = ["CheckpointError", "TrainedNetwork", "load_checkpoint_file", "load_official_hiersumm", "load_network",
           "read_checkpoint"]
