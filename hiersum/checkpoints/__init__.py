"""hiersum checkpoints: reading them (``weights_only=True``), the network they carry, official import, averaging."""

from hiersum.checkpoints.io import Summarizer, load_summarizer, read_checkpoint
from hiersum.checkpoints.official import load_official_hiersumm

__all__ = ["Summarizer", "load_official_hiersumm", "load_summarizer", "read_checkpoint"]
