"""LightningDataModule over a corpus folder in any registered ``data.format`` (:mod:`hiersum.data.registry`)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytorch_lightning as pl
from torch.utils.data import DataLoader

from hiersum.config import DataConfig, ModelConfig
from hiersum.data.batching import SourceLayout, TokenBudgetBatchSampler, collate, flat_layout
from hiersum.data.corpora import read_split
from hiersum.data.registry import format_spec
from hiersum.data.schema import EncodedExample, Example
from hiersum.data.selection import encode_examples, selection_config
from hiersum.data.tokenizer import SubwordTokenizer

SPLITS = ("train", "validation", "test")


def split_path(data_dir: str | Path, split: str, data_format: str = "jsonl") -> Path:
    """The file of ``split`` in ``data_dir`` for ``data_format`` (``<split>.jsonl``; SciTLDR's
    validation split is ``dev.jsonl``), with a clear error when it is missing."""
    return format_spec(data_format).split_path(data_dir, split)


class SummarizationDataModule(pl.LightningDataModule):
    """Reads, encodes and batches the train/validation/test splits of ``config.path``.

    ``model``: the model the batches are for; it decides whether examples carry a paragraph graph
    (``model.graph``) and the flat layout's length. ``layout``: the source its encoder reads, the
    [B, P, T] grid or [B, L] (the encoder registry's ``source_layout``, e.g. from
    :func:`hiersum.model.encoders.source_layout`; the data layer does not know the encoders).
    Defaults: no graphs, the grid.
    """

    def __init__(
        self, config: DataConfig, tokenizer: SubwordTokenizer, *, seed: int = 0, model: ModelConfig | None = None,
        layout: SourceLayout = SourceLayout.GRID,
    ) -> None:
        super().__init__()
        self.config = config
        self.format = format_spec(config.format)
        self.tokenizer = tokenizer
        self.seed = seed
        self.model = model or ModelConfig()
        self.layout = SourceLayout(layout)
        self.examples: dict[str, list[Example]] = {}
        self.encoded: dict[str, list[EncodedExample]] = {}

    def load_split(self, split: str) -> list[EncodedExample]:
        """Read and encode a split once; later calls reuse it."""
        if split not in self.encoded:
            selection = selection_config(self.config, graph=self.model.graph, evaluation=split != "train")
            if self.format.read_encoded is not None:  # token ids: read and encoded at once
                self.examples[split], self.encoded[split] = self.format.read_encoded(
                    self.config.path, split, self.tokenizer, selection, with_text=split != "train"
                )
            else:
                self.examples[split] = read_split(self.format.split_path(self.config.path, split), self.config.format)
                self.encoded[split] = encode_examples(self.examples[split], self.tokenizer, selection)
        return self.encoded[split]

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
            examples,
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
        return DataLoader(
            examples,
            batch_sampler=sampler,
            collate_fn=partial(collate, pad_id=special.pad, bos_id=special.bos, eos_id=special.eos,
                               flat=flat_layout(self.layout, self.model, self.tokenizer)),
            num_workers=self.config.num_workers,
        )

    def train_dataloader(self) -> DataLoader:
        return self.loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self.loader("validation")

    def test_dataloader(self) -> DataLoader:
        return self.loader("test")
