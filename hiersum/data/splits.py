"""The splits of a corpus folder, read and encoded once, without Lightning.

Training reaches them through :class:`hiersum.data.datamodule.SummarizationDataModule`; evaluation
and scripts use :class:`CorpusSplits` directly, so scoring a split never imports Lightning.
"""

from __future__ import annotations

from pathlib import Path

from hiersum.config import DataConfig, ModelConfig
from hiersum.data.corpora import read_split
from hiersum.data.registry import format_spec
from hiersum.data.schema import EncodedExample, Example
from hiersum.data.selection import encode_examples, selection_config
from hiersum.data.tokenizer import SubwordTokenizer


def split_path(data_dir: str | Path, split: str, data_format: str = "jsonl") -> Path:
    """The file of ``split`` in ``data_dir`` for ``data_format`` (``<split>.jsonl``; SciTLDR's
    validation split is ``dev.jsonl``), with a clear error when it is missing."""
    return format_spec(data_format).split_path(data_dir, split)


class CorpusSplits:
    """The train / validation / test splits of ``config.path`` in ``config.format``, encoded with
    ``tokenizer`` for ``model`` (whether examples carry a paragraph graph: ``model.graph``).

    ``examples[split]`` holds the text (ids, references, provenance); ``encoded[split]`` the token
    ids, in the same order. ``load(split)`` reads a split on first use and then reuses it.
    """

    def __init__(self, config: DataConfig, tokenizer: SubwordTokenizer, model: ModelConfig | None = None) -> None:
        self.config = config
        self.format = format_spec(config.format)
        self.tokenizer = tokenizer
        self.model = model or ModelConfig()
        self.examples: dict[str, list[Example]] = {}
        self.encoded: dict[str, list[EncodedExample]] = {}

    def load(self, split: str) -> list[EncodedExample]:
        """The encoded examples of ``split`` (read and encoded on the first call)."""
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

    def evaluation_split(self, split: str) -> tuple[list[Example], list[EncodedExample]]:
        """The examples of ``split`` and their encodings, the first ``data.limit_eval_examples`` when set."""
        encoded = self.load(split)
        examples = self.examples[split]
        limit = self.config.limit_eval_examples
        if limit:
            encoded, examples = encoded[:limit], examples[:limit]
        return examples, encoded
