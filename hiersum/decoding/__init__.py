"""Decoding: greedy and beam search over a step interface, generation with a network; it receives tensors and
``GenerationOptions`` only (batches of records are :mod:`hiersum.inference`'s)."""

from hiersum.decoding.generation import GenerationOptions, generate
from hiersum.decoding.search import GenerationOutput, Hypothesis

__all__ = ["GenerationOptions", "GenerationOutput", "Hypothesis", "generate"]
