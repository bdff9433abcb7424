"""LightningDataModule over a corpus folder in any registered ``data.format`` (:mod:`hiersum.data.formats.registry`)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from hiersum.config import DataConfig, ModelConfig
from hiersum.data.batching import (
    ResumableDataLoader,
    SourceLayout,
    TokenBudgetBatchSampler,
    collate,
    flat_layout,
)
from hiersum.data.corpus_splits import CorpusSplits
from hiersum.data.prepared import PreparedSplit
from hiersum.data.tokenizer import SubwordTokenizer


class SummarizationDataModule(pl.LightningDataModule):
    """Batches the train/validation/test splits of ``config.path``, prepared on disk once
    (:class:`~hiersum.data.corpus_splits.CorpusSplits`) and read lazily by the loaders.

    ``model``: the model the batches are for; it decides whether examples carry a paragraph graph
    (``model.graph``) and the flat layout's length. ``layout``: the source its encoder reads, the
    [B, P, T] grid or [B, L] (the encoder registry's ``source_layout``, e.g. from
    :func:`hiersum.model.encoder_registry.source_layout`; the data layer does not know the encoders).
    Defaults: no graphs, the grid.
    """

    def __init__(
        self, config: DataConfig, tokenizer: SubwordTokenizer, *, seed: int = 0, model: ModelConfig | None = None,
        layout: SourceLayout = SourceLayout.GRID,
    ) -> None:
        super().__init__()
        self.splits = CorpusSplits(config, tokenizer, model)
        self.config = config
        self.tokenizer = tokenizer
        self.seed = seed
        self.model = self.splits.model
        self.layout = SourceLayout(layout)
        self._train_sampler: TokenBudgetBatchSampler | None = None

    def load_split(self, split: str) -> PreparedSplit:
        """The split prepared on disk (prepared on the first call of any run, then reused), read lazily."""
        return self.splits.load(split)

    def setup(self, stage: str | None = None) -> None:
        if stage in (None, "fit"):
            self.load_split("train")
            self.load_split("validation")
        if stage in (None, "validate"):
            self.load_split("validation")
        if stage in (None, "test"):
            self.load_split("test")

    def loader(self, split: str, *, shuffle: bool = False, distributed: bool = True) -> DataLoader:
        examples = self.load_split(split)
        trainer = self.trainer if distributed else None
        sampler = TokenBudgetBatchSampler(
            examples.lengths,  # planned from the length index: no example is read
            batch_tokens=self.config.batch_tokens,
            max_batch_size=self.config.max_batch_size,
            shuffle=shuffle,
            seed=self.seed,
            num_replicas=trainer.world_size if trainer else 1,
            rank=trainer.global_rank if trainer else 0,
        )
        if trainer is not None and shuffle:
            sampler.set_epoch(trainer.current_epoch)
        special = self.tokenizer.special
        return ResumableDataLoader(
            examples,
            batch_sampler=sampler,
            collate_fn=partial(collate, pad_id=special.pad, bos_id=special.bos, eos_id=special.eos,
                               flat=flat_layout(self.layout, self.model, self.tokenizer),
                               max_paragraph_tokens=self.config.max_paragraph_tokens,
                               eos_after_truncation=self.config.eos_after_truncation),
            num_workers=self.config.num_workers,
            # its own generator: starting an epoch draws no number from the global RNG, whose state a
            # resumed run restores (hiersum.training.resume.RandomState)
            generator=torch.Generator().manual_seed(self.seed),
        )

    def train_dataloader(self) -> DataLoader:
        loader = self.loader("train", shuffle=True)
        self._train_sampler = loader.batch_sampler
        return loader

    def on_before_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        """Counts the training batches that reach the model (the sampler's resumable position; a
        loader's prefetched batch is not counted until it is used)."""
        if self.trainer is not None and self.trainer.training and self._train_sampler is not None:
            self._train_sampler.mark_consumed()
        return batch

    def val_dataloader(self) -> DataLoader:
        return self.loader("validation")

    def test_dataloader(self) -> DataLoader:
        return self.loader("test")
