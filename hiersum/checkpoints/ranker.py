"""Ranker checkpoints: one self-contained file (weights, model config, tokenizer) written by
``hiersum train-ranker``, read with ``weights_only=True``; and the :class:`RankerScorer` that makes a
checkpoint a :class:`hiersum.data.selection.ParagraphScorer`.

Importing this module registers the ``ranker`` selection rule (``data.selection=ranker
data.ranker=PATH``) in :data:`hiersum.data.selection.SCORERS`; the hiersum commands import it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from hiersum.atomic import write_atomically
from hiersum.checkpoints.io import RANKER_FORMAT, load_checkpoint_file, load_weights
from hiersum.checkpoints.kinds import RANKER, check_file, rebuilding
from hiersum.config import RankerModelConfig, config_dict
from hiersum.data.ranker_data import collate_ranker, encode_ranker_examples
from hiersum.data.schema import Example
from hiersum.data.selection import SCORERS, EncodingConfig
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.model.ranker import ParagraphRanker

RANKER_VERSION = 1


def ranker_checkpoint(
    network: ParagraphRanker, tokenizer: SubwordTokenizer, *, metrics: dict[str, float] | None = None
) -> dict[str, Any]:
    """The checkpoint dict of ``network`` (plain values and tensors only: ``weights_only`` loads it)."""
    return {
        "format": RANKER_FORMAT,
        "version": RANKER_VERSION,
        "model": config_dict(network.config),  # plain strings for the feature names
        "vocab_size": network.embedding.num_embeddings,
        "pad_id": int(network.embedding.padding_idx),
        "state_dict": {name: value.detach().cpu() for name, value in network.state_dict().items()},
        "tokenizer_json": tokenizer.to_str(),
        "tokenizer_tokens": list(tokenizer.tokens),
        "metrics": dict(metrics or {}),
    }


def save_ranker(path: str | Path, network: ParagraphRanker, tokenizer: SubwordTokenizer, **kwargs: Any) -> Path:
    """Write :func:`ranker_checkpoint` to ``path`` atomically (a temporary file renamed into place)."""
    checkpoint = ranker_checkpoint(network, tokenizer, **kwargs)
    return write_atomically(path, lambda temporary: torch.save(checkpoint, temporary))


@dataclass
class LoadedRanker:
    """A ranker checkpoint read back: the network (eval mode), its tokenizer, the metrics it was saved with."""

    network: ParagraphRanker
    tokenizer: SubwordTokenizer
    metrics: dict[str, float]


def load_ranker(path: str | Path, *, map_location: str | torch.device = "cpu") -> LoadedRanker:
    """Read a ranker checkpoint (:func:`hiersum.checkpoints.io.load_checkpoint_file`, ``weights_only=True``);
    any failure to read it as one raises :class:`hiersum.checkpoints.CheckpointError`."""
    checkpoint = load_checkpoint_file(path, RANKER, map_location=map_location)
    with rebuilding(path, RANKER, "entries"):
        tokenizer = SubwordTokenizer.from_str(checkpoint["tokenizer_json"], tuple(checkpoint["tokenizer_tokens"]))
        network = ParagraphRanker(RankerModelConfig(**checkpoint["model"]), vocab_size=checkpoint["vocab_size"],
                                  pad_id=checkpoint["pad_id"])
        weights, metrics = dict(checkpoint["state_dict"]), dict(checkpoint.get("metrics", {}))
    load_weights(path, network, weights, RANKER)
    return LoadedRanker(network.eval(), tokenizer, metrics)


class RankerScorer:
    """A trained ranker as a :class:`hiersum.data.selection.ParagraphScorer`: sigmoid scores in [0, 1]."""

    def __init__(self, network: ParagraphRanker, tokenizer: SubwordTokenizer, *, batch_examples: int = 16,
                 device: str | torch.device = "cpu") -> None:
        self.network, self.tokenizer = network.eval().to(device), tokenizer
        self.batch_examples, self.device = batch_examples, torch.device(device)

    @torch.no_grad()
    def score(self, examples: Sequence[Example]) -> list[list[float]]:
        scores: list[list[float]] = []
        config = self.network.config
        for start in range(0, len(examples), self.batch_examples):
            chunk = examples[start : start + self.batch_examples]
            encoded = encode_ranker_examples(chunk, self.tokenizer, max_tokens=config.max_paragraph_tokens,
                                             max_title_tokens=config.max_title_tokens, features=config.features)
            if not any(example.paragraphs for example in encoded):
                scores += [[] for _ in encoded]
                continue
            batch = collate_ranker(encoded, pad=self.tokenizer.special.pad).to(self.device)
            flat = torch.sigmoid(self.network(**batch.inputs())).cpu().tolist()
            for example in encoded:
                scores.append(flat[: len(example.paragraphs)])
                flat = flat[len(example.paragraphs) :]
        return scores


@functools.lru_cache(maxsize=4)
def _cached_scorer(path: str, mtime_ns: int) -> RankerScorer:
    loaded = load_ranker(path)
    return RankerScorer(loaded.network, loaded.tokenizer)


def load_ranker_scorer(path: str | Path) -> RankerScorer:
    """The scorer of the checkpoint ``path`` (loaded once per process while the file is unchanged)."""
    path = Path(path)
    check_file(path, RANKER)
    return _cached_scorer(str(path.resolve()), path.stat().st_mtime_ns)


def _selection_scorer(config: EncodingConfig) -> RankerScorer:
    if not config.ranker:
        raise ValueError("data.selection=ranker needs data.ranker=PATH (a checkpoint of hiersum train-ranker)")
    return load_ranker_scorer(config.ranker)


SCORERS.register("ranker", _selection_scorer, replace=True)
