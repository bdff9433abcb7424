"""LightningDataModule over a folder of native JSONL splits (or ranked WikiSum shards)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytorch_lightning as pl
from torch.utils.data import DataLoader

from hiersum.config import DataConfig, ModelConfig
from hiersum.data.batching import TokenBudgetBatchSampler, collate, flat_layout
from hiersum.data.corpora import read_split
from hiersum.data.schema import EncodedExample, Example
from hiersum.data.selection import encode_examples, selection_config
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.data.wikisum import read_wikisum

SPLITS = ("train", "validation", "test")


def split_path(data_dir: str | Path, split: str) -> Path:
    """``<data_dir>/<split>.jsonl``, with a clear error when it is missing."""
    path = Path(data_dir) / f"{split}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"data split '{split}' not found: expected the file {path}")
    return path


class SummarizationDataModule(pl.LightningDataModule):
    """Reads, encodes and batches the train/validation/test splits of ``config.path``.

    ``model``: the model the batches are for; it decides the source layout (the [B, P, T] grid, or
    [B, L] for ``model.encoder=flat``) and whether examples carry a paragraph graph (``model.graph``).
    None: the hierarchical grid without graphs.
    """

    def __init__(
        self, config: DataConfig, tokenizer: SubwordTokenizer, *, seed: int = 0, model: ModelConfig | None = None
    ) -> None:
        super().__init__()
        self.config = config
        self.tokenizer = tokenizer
        self.seed = seed
        self.model = model or ModelConfig()
        self.examples: dict[str, list[Example]] = {}
        self.encoded: dict[str, list[EncodedExample]] = {}

    def load_split(self, split: str) -> list[EncodedExample]:
        """Read and encode a split once; later calls reuse it."""
        if split not in self.encoded:
            selection = selection_config(self.config, graph=self.model.graph, evaluation=split != "train")
            if self.config.format == "wikisum":
                self.examples[split], self.encoded[split] = read_wikisum(
                    self.config.path, split, self.tokenizer, selection, with_text=split != "train"
                )
            else:
                self.examples[split] = read_split(split_path(self.config.path, split), self.config.format)
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
                               flat=flat_layout(self.model, self.tokenizer)),
            num_workers=self.config.num_workers,
        )

    def train_dataloader(self) -> DataLoader:
        return self.loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self.loader("validation")

    def test_dataloader(self) -> DataLoader:
        return self.loader("test")
