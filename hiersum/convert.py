"""Kept for compatibility: the official-checkpoint import lives in :mod:`hiersum.checkpoints.official`."""

from hiersum.checkpoints.official import hiersum_from_official, load_official_hiersumm, read_official_checkpoint

__all__ = ["hiersum_from_official", "load_official_hiersumm", "read_official_checkpoint"]
