"""Typed configuration schemas, registered with Hydra's ConfigStore.

Every YAML file under ``conf/`` is validated against one of these dataclasses at
composition time, so a misspelt key or a wrong type fails before training starts.
Each dataclass checks its own invariants in ``__post_init__``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING


@dataclass
class ModelConfig:
    """Sizes of the hierarchical summarizer (Liu & Lapata 2019)."""

    d_model: int = 256
    """Width of every token and paragraph state (D)."""
    heads: int = 4
    """Attention heads of the local (paragraph-level) and decoder layers."""
    ff_size: int = 1024
    """Inner width of the position-wise feed-forward blocks."""
    encoder_layers: int = 4
    """Total encoder layers, local and inter-paragraph together."""
    inter_layers: list[int] = field(default_factory=lambda: [2, 3])
    """0-based indices of the encoder layers that are inter-paragraph layers."""
    inter_heads: int = 4
    """Pooling heads of an inter-paragraph layer (paragraph vector = heads x D/heads)."""
    decoder_layers: int = 2
    """Transformer decoder layers."""
    dropout: float = 0.1
    """Dropout on embeddings, attention outputs and feed-forward blocks."""
    max_positions: int = 5000
    """Length of the sinusoid tables (tokens per paragraph, paragraphs, summary length)."""
    encoder: str = "hierarchical"
    """``hierarchical`` (the paper's model) or ``flat`` (the FT baseline: the selected paragraphs
    joined with a separator token into one sequence [B, L], a plain transformer encoder)."""
    flat_max_tokens: int = 500
    """Flat encoder only: source tokens kept after joining the paragraphs (EOS is appended)."""
    graph: str = "none"
    """Paragraph graph biasing the inter-paragraph attention: ``none`` (official), ``similarity``
    (tf-idf cosine) or ``discourse`` (shared entity mentions); see ``hiersum/data/graph.py``."""
    pooling_penalty: float = 0.0
    """Weight of the pooling diversity penalty ||A A^T - I||_F^2 added to the training loss (0: off)."""

    def __post_init__(self) -> None:
        if self.encoder not in ("hierarchical", "flat"):
            raise ValueError(f"model.encoder must be 'hierarchical' or 'flat', found {self.encoder!r}")
        if self.graph not in ("none", "similarity", "discourse"):
            raise ValueError(f"model.graph must be 'none', 'similarity' or 'discourse', found {self.graph!r}")
        if self.pooling_penalty < 0:
            raise ValueError(f"model.pooling_penalty must be >= 0, found {self.pooling_penalty}")
        if self.encoder == "flat" and (list(self.inter_layers) or self.graph != "none" or self.pooling_penalty):
            raise ValueError(
                "model.encoder=flat has no inter-paragraph layers: set model.inter_layers=[], model.graph=none "
                f"and model.pooling_penalty=0 (found {list(self.inter_layers)}, {self.graph!r}, {self.pooling_penalty})"
            )
        if self.flat_max_tokens < 1:
            raise ValueError(f"model.flat_max_tokens must be >= 1, found {self.flat_max_tokens}")
        if self.d_model % self.heads:
            raise ValueError(f"model.d_model={self.d_model} must be divisible by model.heads={self.heads}")
        if self.d_model % self.inter_heads:
            raise ValueError(
                f"model.d_model={self.d_model} must be divisible by model.inter_heads={self.inter_heads}"
            )
        if self.d_model % 2:
            raise ValueError(f"model.d_model={self.d_model} must be even (two half-width position tables)")
        bad = [i for i in self.inter_layers if not 0 <= i < self.encoder_layers]
        if bad:
            raise ValueError(
                f"model.inter_layers={list(self.inter_layers)} must index layers 0..{self.encoder_layers - 1}"
            )
        if self.decoder_layers < 1:
            raise ValueError(f"model.decoder_layers must be >= 1, found {self.decoder_layers}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"model.dropout must be in [0, 1), found {self.dropout}")


@dataclass
class TokenizerConfig:
    """Where the subword tokenizer comes from."""

    path: str | None = None
    """A local HF tokenizer directory or a ``tokenizer.json``; None trains one on the train split."""
    vocab_size: int = 4000
    """Vocabulary size when training a tokenizer."""
    lowercase: bool = False
    """Lowercase text before tokenizing (only when training a tokenizer)."""
    pad_token: str | None = None
    """Padding token of a loaded tokenizer (None: ``<pad>``, else the official ``<PAD>``)."""
    bos_token: str | None = None
    """Begin-of-summary token of a loaded tokenizer (None: ``<s>``, else the official ``<S>``)."""
    eos_token: str | None = None
    """End-of-summary token of a loaded tokenizer (None: ``</s>``, else the official ``</S>``)."""


@dataclass
class DataConfig:
    """Which corpus to read and how to turn an example into a [P, T] grid of token ids."""

    path: str = MISSING
    """Folder holding ``{train,validation,test}.jsonl`` (format ``jsonl``) or the ranked WikiSum
    shards ``WIKI.{train,valid,test}.N.pt`` (format ``wikisum``)."""
    format: str = "jsonl"
    """``jsonl`` (native JSONL text), ``multinews`` (Multi-News JSONL), ``scitldr`` (SciTLDR JSONL, several
    references; ``hiersum/data/corpora.py``) or ``wikisum`` (the official ranked WikiSum release: SentencePiece
    ids, read by ``hiersum/data/wikisum.py``; needs ``tokenizer=official_spm``)."""
    max_paragraphs: int = 16
    """P: paragraphs kept per example."""
    max_paragraph_tokens: int = 48
    """T: tokens kept per paragraph."""
    max_target_tokens: int = 128
    """Summary tokens kept for training (BOS and EOS excluded)."""
    selection: str = "first"
    """``first`` (document order) or ``round_robin`` (first paragraph of each document, then second...)."""
    title_paragraph: bool = True
    """Put the example's title (topic or entity), when it has one, as paragraph 0."""
    batch_tokens: int = 8192
    """Token budget of a batch: examples x P x T of the longest example in the batch."""
    max_batch_size: int = 64
    """Upper bound on examples per batch."""
    num_workers: int = 0
    """DataLoader worker processes."""
    limit_eval_examples: int | None = None
    """Decode and score only the first N examples of the evaluated split (None: all)."""
    eval_max_paragraphs: int | None = None
    """P for the validation and test splits (None: ``max_paragraphs``); the paper trains on 24, tests on 40."""

    def __post_init__(self) -> None:
        if self.format not in ("jsonl", "multinews", "scitldr", "wikisum"):
            raise ValueError(
                f"data.format must be 'jsonl', 'multinews', 'scitldr' or 'wikisum', found {self.format!r}"
            )
        if self.eval_max_paragraphs is not None and self.eval_max_paragraphs < 1:
            raise ValueError(f"data.eval_max_paragraphs must be >= 1 or null, found {self.eval_max_paragraphs}")
        if self.selection not in ("first", "round_robin"):
            raise ValueError(f"data.selection must be 'first' or 'round_robin', found {self.selection!r}")
        for name in ("max_paragraphs", "max_paragraph_tokens", "max_target_tokens", "batch_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"data.{name} must be >= 1, found {getattr(self, name)}")


@dataclass
class OptimConfig:
    """Adam with the noam schedule: lr * d^-0.5 * min(step^-0.5, step * warmup^-1.5)."""

    lr: float = 2.0
    """Noam scale factor (the paper uses 3 with warm-up 8000)."""
    warmup_steps: int = 400
    betas: list[float] = field(default_factory=lambda: [0.9, 0.998])
    eps: float = 1e-9
    weight_decay: float = 0.0
    label_smoothing: float = 0.1

    def __post_init__(self) -> None:
        if self.warmup_steps < 1:
            raise ValueError(f"optim.warmup_steps must be >= 1, found {self.warmup_steps}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"optim.label_smoothing must be in [0, 1), found {self.label_smoothing}")


@dataclass
class DecodeConfig:
    """Beam search settings (beam_size 1 is greedy decoding)."""

    beam_size: int = 4
    alpha: float = 0.6
    """GNMT length penalty exponent: score / ((5 + len) / 6) ** alpha."""
    min_length: int = 5
    max_length: int = 80
    batch_size: int = 16
    """Examples per decoding batch (each expanded to beam_size rows)."""
    stopping: str = "full"
    """``full``: an example ends once beam_size hypotheses ended (fairseq / HF style);
    ``official``: it ends when its best beam ends (the official hiersumm rule)."""
    no_repeat_ngram_size: int = 0
    """Forbid a token that would repeat an n-gram of this size in a hypothesis (3: trigram
    blocking as PreSumm / fairseq); 0 turns it off."""
    n_best: int = 1
    """Hypotheses returned per example, best first (at most beam_size; 1 with greedy)."""
    greedy: bool = False
    """Greedy search (argmax at each step) instead of beam search; beam_size is ignored."""
    max_steps: int | None = None
    """Hard cap on decoding steps, over max_length and min_length (None: no cap)."""

    def __post_init__(self) -> None:
        if self.stopping not in ("full", "official"):
            raise ValueError(f"decode.stopping must be 'full' or 'official', found {self.stopping!r}")
        if self.beam_size < 1:
            raise ValueError(f"decode.beam_size must be >= 1, found {self.beam_size}")
        if self.no_repeat_ngram_size < 0:
            raise ValueError(f"decode.no_repeat_ngram_size must be >= 0, found {self.no_repeat_ngram_size}")
        if not 1 <= self.n_best <= (1 if self.greedy else self.beam_size):
            raise ValueError(
                f"decode.n_best={self.n_best} must be in [1, decode.beam_size] (1 with decode.greedy=true)"
            )
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"decode.max_steps must be >= 1 or null, found {self.max_steps}")
        if self.max_length < max(self.min_length, 1):
            raise ValueError(
                f"decode.max_length={self.max_length} must be >= 1 and >= decode.min_length={self.min_length}"
            )


def register_configs() -> None:
    """Register the schemas so ``conf/<group>/*.yaml`` files are validated against them."""
    store = ConfigStore.instance()
    store.store(group="model", name="schema", node=ModelConfig)
    store.store(group="tokenizer", name="schema", node=TokenizerConfig)
    store.store(group="data", name="schema", node=DataConfig)
    store.store(group="optim", name="schema", node=OptimConfig)
    store.store(group="decode", name="schema", node=DecodeConfig)


def to_dataclass(schema: type, node: Any) -> Any:
    """Build (and so validate) a schema dataclass from a DictConfig or dict."""
    from omegaconf import OmegaConf

    values = OmegaConf.to_container(node, resolve=True) if not isinstance(node, dict) else dict(node)
    return schema(**values)
