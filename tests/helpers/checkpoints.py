"""Checkpoint files for the tests of bad inputs: a real tiny summarizer and ranker checkpoint, their bytes cut
in half, and the one-line error every bad checkpoint must give."""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch

from hiersum.config import ModelConfig, RankerModelConfig
from hiersum.data.tokenizer import train_tokenizer
from hiersum.model.ranker import ParagraphRanker
from tests.helpers.training import module_and_batch

WEIGHTS_ONLY_ADVICE = "weights_only=False"
"""PyTorch's advice on a ``weights_only`` refusal, which hiersum never repeats."""


def summarizer_checkpoint(model: ModelConfig | None = None) -> dict:
    """The checkpoint dict of the tiny model, or of ``model`` (as Lightning's ModelCheckpoint saves the module's
    part)."""
    module, _, _ = module_and_batch(model)
    checkpoint = {"state_dict": module.state_dict(), "hyper_parameters": dict(module.hparams)}
    module.on_save_checkpoint(checkpoint)
    return checkpoint


def save_summarizer_checkpoint(path: Path, model: ModelConfig | None = None) -> Path:
    """The checkpoint of the tiny model, or of ``model`` (:func:`summarizer_checkpoint`, untrained) saved at
    ``path``."""
    torch.save(summarizer_checkpoint(model), path)
    return path


def save_ranker_checkpoint(path: Path) -> Path:
    """A tiny ranker checkpoint of ``hiersum train-ranker`` at ``path``."""
    from hiersum.checkpoints.ranker import save_ranker

    tokenizer = train_tokenizer(["alpha beta gamma delta.", "beta gamma epsilon zeta."] * 10, vocab_size=60)
    network = ParagraphRanker(RankerModelConfig(embedding_dim=8, hidden_size=8), vocab_size=60,
                              pad_id=tokenizer.special.pad)
    return save_ranker(path, network, tokenizer)


def truncated_copy(source: Path, target: Path) -> Path:
    """``target``: the first half of ``source``'s bytes."""
    data = source.read_bytes()
    target.write_bytes(data[: len(data) // 2])
    return target


def digest(path: Path) -> str:
    """The SHA-256 of a file's bytes (a bad checkpoint is never modified)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_one_line_error(message: str, path: Path | str, *expected: str) -> None:
    """A checkpoint error message: one line naming ``path``, saying what was expected, holding ``expected``,
    without PyTorch's advice to load with ``weights_only=False``."""
    assert "\n" not in message and str(path) in message and "expected" in message, message
    assert WEIGHTS_ONLY_ADVICE not in message, message
    for text in expected:
        assert text in message, message


def official_like(tensor_value: torch.Tensor | None = None) -> dict:
    """A dict shaped as an official hiersumm checkpoint (``model`` and ``opt``)."""
    import argparse

    return {"model": {"encoder.embeddings.weight": torch.zeros(4, 2) if tensor_value is None else tensor_value},
            "opt": argparse.Namespace(heads=2)}
