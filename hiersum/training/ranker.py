"""Training the paragraph ranker (``hiersum train-ranker``): a small LightningModule over
:class:`hiersum.model.ranker.ParagraphRanker`, cross-entropy of its sigmoid score against each paragraph's
ROUGE-2 recall (:mod:`hiersum.data.ranker_data`), validated by the recall its top-k paragraphs reach; the best
epoch is written as one self-contained ranker checkpoint (:mod:`hiersum.checkpoints.ranker`)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from hydra.utils import instantiate
from torch.utils.data import DataLoader

from hiersum.checkpoints.ranker import save_ranker
from hiersum.config import DataConfig, RankerModelConfig, RankerTrainConfig, config_dict
from hiersum.data.corpus_tokenizer import prepare_tokenizer
from hiersum.data.ranker_data import RankerBatch, RankerExample, collate_ranker, encode_ranker_examples, split_labels
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.model.ranker import ParagraphRanker

RANKER_FILE = "ranker-best.pt"
"""File name of the best ranker under ``<run>/checkpoints/``."""
MONITOR = "val_top_k_recall"


def top_k_label_sum(logits: torch.Tensor, labels: torch.Tensor, owner: torch.Tensor, k: int) -> list[float]:
    """Per example: the sum of the labels of its ``k`` highest-scored paragraphs (logits, labels, owner: [N])."""
    sums = []
    for example in range(int(owner.max()) + 1 if owner.numel() else 0):
        mine = owner == example
        top = logits[mine].topk(min(k, int(mine.sum()))).indices
        sums.append(float(labels[mine][top].sum()))
    return sums


class RankerModule(pl.LightningModule):
    """Trains :class:`ParagraphRanker` from plain config values (saved as hyper-parameters)."""

    def __init__(self, *, model: dict[str, Any], vocab_size: int, pad_id: int, optimizer: dict[str, Any],
                 top_k: int) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.network = ParagraphRanker(RankerModelConfig(**model), vocab_size=vocab_size, pad_id=pad_id)
        self.top_k = top_k
        self._validation_sums: list[float] = []

    def _loss(self, batch: RankerBatch) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.network(**batch.inputs())  # [N]
        return F.binary_cross_entropy_with_logits(logits, batch.labels), logits

    def training_step(self, batch: RankerBatch, batch_index: int) -> torch.Tensor:
        loss, _ = self._loss(batch)
        self.log("train_loss", loss, batch_size=batch.n_examples, prog_bar=True)
        return loss

    def validation_step(self, batch: RankerBatch, batch_index: int) -> None:
        loss, logits = self._loss(batch)
        self.log("val_loss", loss, batch_size=batch.n_examples, prog_bar=True)
        self._validation_sums += top_k_label_sum(logits, batch.labels, batch.paragraph_example, self.top_k)

    def on_validation_epoch_end(self) -> None:
        if self._validation_sums:
            value = sum(self._validation_sums) / len(self._validation_sums)
            self.log(MONITOR, value, prog_bar=True)
        self._validation_sums = []

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return instantiate(self.hparams.optimizer)(self.parameters())


class SaveBestRanker(pl.Callback):
    """Writes the ranker checkpoint whenever ``val_top_k_recall`` improves (sanity checks excluded)."""

    def __init__(self, path: Path, tokenizer: SubwordTokenizer) -> None:
        self.path, self.tokenizer, self.best = path, tokenizer, float("-inf")

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking or MONITOR not in trainer.callback_metrics:
            return
        value = float(trainer.callback_metrics[MONITOR])
        if value > self.best:
            self.best = value
            metrics = {MONITOR: value, "epoch": trainer.current_epoch, "top_k": pl_module.top_k}
            save_ranker(self.path, pl_module.network, self.tokenizer, metrics=metrics)


def ranker_examples(data: DataConfig, split: str, tokenizer: SubwordTokenizer, model: RankerModelConfig,
                    *, max_paragraphs: int | None) -> list[RankerExample]:
    """The examples of ``split`` with their labels, each cut to its first ``max_paragraphs`` paragraphs: the
    paragraphs of the paragraph rule (``data.paragraphs``, its tokens counted with ``tokenizer``), those encoding
    ranks (:func:`hiersum.data.ranker_data.split_labels`)."""
    pairs = split_labels(data, split, tokenizer)
    examples, labels = [example for example, _ in pairs], [labels[:max_paragraphs] for _, labels in pairs]
    encoded = encode_ranker_examples(examples, tokenizer, max_tokens=model.max_paragraph_tokens,
                                     max_title_tokens=model.max_title_tokens, labels=labels,
                                     features=model.features)
    return [example.first(len(example.labels)) for example in encoded if example.labels]


def fit_ranker(cfg: RankerTrainConfig) -> dict[str, Any]:
    """Train a ranker on ``data``'s train split, validate on its validation split; write
    ``<run>/checkpoints/ranker-best.pt``. Returns ``{"checkpoint": path, "val_top_k_recall": best, ...}``."""
    pl.seed_everything(cfg.seed, workers=True)
    tokenizer = prepare_tokenizer(cfg.tokenizer, cfg.data)
    train = ranker_examples(cfg.data, "train", tokenizer, cfg.ranker_model, max_paragraphs=cfg.max_train_paragraphs)
    validation = ranker_examples(cfg.data, "validation", tokenizer, cfg.ranker_model, max_paragraphs=None)
    collate = functools.partial(collate_ranker, pad=tokenizer.special.pad)
    loaders = (DataLoader(train, batch_size=cfg.batch_examples, shuffle=True, collate_fn=collate),
               DataLoader(validation, batch_size=cfg.batch_examples, collate_fn=collate))
    module = RankerModule(model=config_dict(cfg.ranker_model), vocab_size=tokenizer.vocab_size,
                          pad_id=tokenizer.special.pad, optimizer=dict(cfg.optimizer), top_k=cfg.top_k)
    path = Path(cfg.paths["output_dir"]) / "checkpoints" / RANKER_FILE
    saver = SaveBestRanker(path, tokenizer)
    trainer: pl.Trainer = instantiate(cfg.trainer, callbacks=[saver])
    trainer.fit(module, *loaders)
    if not path.is_file():
        raise RuntimeError("no validation epoch ended: no ranker checkpoint was written")
    return {"checkpoint": str(path), MONITOR: saver.best, "train_examples": len(train),
            "validation_examples": len(validation)}
