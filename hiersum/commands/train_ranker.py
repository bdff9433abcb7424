"""``hiersum train-ranker``: train the paragraph ranker of Liu & Lapata (2019).

Examples::

    hiersum train-ranker data=multinews data.path=/data/multi-news
    hiersum train-ranker data=jsonl data.path=/data/corpus ranker_model.hidden_size=256 trainer.max_epochs=4

Writes ``<run>/checkpoints/ranker-best.pt`` (the epoch whose top-``top_k`` paragraphs reach the highest
summed ROUGE-2 recall on the validation split), which ``data.selection=ranker data.ranker=PATH`` and
``hiersum rank ranker=PATH`` read. The work is :func:`hiersum.training.ranker.fit_ranker`.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from hiersum.config import RankerTrainConfig, command_config
from hiersum.training.ranker import fit_ranker

USAGE = "hiersum train-ranker data=FORMAT data.path=DIR"


def train_ranker(cfg: RankerTrainConfig | DictConfig) -> dict[str, Any]:
    """Fit the ranker; print and return where its checkpoint is and the recall it reached. ``cfg``: the typed
    config, or the composed Hydra config it is converted from."""
    cfg = command_config(cfg, RankerTrainConfig, usage=USAGE)
    result = fit_ranker(cfg)
    print(f"ranker: {result['checkpoint']} (val_top_k_recall {result['val_top_k_recall']:.4f}, top_k {cfg.top_k})")
    return result
