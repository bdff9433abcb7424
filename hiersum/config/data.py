"""``tokenizer`` and ``data``: where the subword tokenizer comes from, which corpus is read and how an example
becomes a [P, T] grid of token ids."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from hiersum.config.checks import MISSING, check
from hiersum.config.choices import OnError
from hiersum.config.selection import ParagraphSelection


@dataclass
class TokenizerConfig:
    """Where the subword tokenizer comes from; defaults = ``conf/tokenizer/default.yaml``."""

    path: str | None = None
    """A local HF tokenizer directory or a ``tokenizer.json``; None trains one on the train split."""
    vocab_size: int = 4000
    """Vocabulary size when training a tokenizer."""
    lowercase: bool = False
    """Lowercase text before tokenizing (only when training a tokenizer)."""
    byte_fallback: bool = False
    """Train with the 256 byte pieces ``<0x00>``..``<0xFF>`` in the vocabulary (``vocab_size`` counts them): a
    character the training text lacks is encoded as its UTF-8 bytes instead of ``<unk>``, so every source word can
    be copied (only when training a tokenizer; SentencePiece's byte fallback)."""

    def __post_init__(self) -> None:
        byte_pieces = 256 if self.byte_fallback else 0
        check(self.vocab_size > byte_pieces, "tokenizer.vocab_size", f"> {byte_pieces} with tokenizer.byte_fallback="
              f"{str(self.byte_fallback).lower()} (the byte pieces are counted in it)", self.vocab_size)
    pad_token: str | None = None
    """Padding token of a loaded tokenizer (None: ``<pad>``, else the official ``<PAD>``)."""
    bos_token: str | None = None
    """Begin-of-summary token of a loaded tokenizer (None: ``<s>``, else the official ``<S>``)."""
    eos_token: str | None = None
    """End-of-summary token of a loaded tokenizer (None: ``</s>``, else the official ``</S>``)."""


@dataclass
class DataConfig(ParagraphSelection):
    """Which corpus to read and how to turn an example into a [P, T] grid of token ids; defaults =
    ``conf/data/sample.yaml`` (except ``path``, which every preset gives). Its paragraph selection
    (``max_paragraphs``, ``max_paragraph_tokens``, ``paragraphs``, ``selection``, ``ranker``, ``title_paragraph``) is
    :class:`~hiersum.config.selection.ParagraphSelection`'s, whose fields it extends (``data.max_paragraphs=24``)."""

    KEY_PREFIX: ClassVar[str] = "data."

    path: str = MISSING
    """Folder holding the splits, e.g. ``{train,validation,test}.jsonl`` (format ``jsonl``), ``{train,dev,test}.jsonl``
    (``scitldr``), ``{train,val,test}.{source,target}`` (``line_pairs``) or the ranked WikiSum shards
    ``WIKI.{train,valid,test}.N.pt`` (``wikisum``)."""
    format: str = "jsonl"
    """A registered data format (``hiersum.data.formats.registry.FORMATS``, checked there): ``jsonl`` (native JSONL
    text), ``multinews`` (Multi-News JSONL), ``scitldr`` (SciTLDR JSONL, several references), ``cnndm``
    (CNN/DailyMail: parquet, ``save_to_disk`` or JSONL), ``aeslc`` (the AESLC folders of ``.subject`` files,
    several references), ``line_pairs`` (``{split}.source`` + ``{split}.target``, one example a line: NeuS, the
    original Multi-News release; its layout is :data:`LINE_LAYOUT_FIELDS`) or ``wikisum`` (the official ranked
    WikiSum release: SentencePiece ids; needs ``tokenizer=official_spm``)."""
    document_separator: str | None = None
    """``line_pairs``: the text between the documents of a source line (NeuS ``" [SEP] "``, the original Multi-News
    release ``story_separator_special_tag``); None: a line is one document."""
    paragraph_markers: list[str] = field(default_factory=list)
    """``line_pairs``: the texts at which a document is cut into paragraphs, each dropped (Multi-News
    ``NEWLINE_CHAR``; NeuS ``TITLE=>`` and ``ARTICLE=>``, so an article's headline is a paragraph of its own); in a
    target line, where the reference's lines break. Empty: a document is one paragraph."""
    summary_prefix: str | None = None
    """``line_pairs``: a text dropped from the start of a target line (Multi-News ``–``, as ``multinews`` drops it)."""
    max_target_tokens: int = 96
    """Summary tokens kept for training (BOS and EOS excluded)."""
    eos_after_truncation: bool = True
    """A target cut at ``max_target_tokens`` still ends in EOS, as the official code and PreSumm train (the model
    learns to stop where the cut fell, often mid-sentence); False: a cut target has no end, its loss covers its
    tokens and no EOS (a target that fits ends in EOS either way)."""
    every_reference: bool = False
    """Train on every reference of an example, each a target of its own (the example repeated once per
    reference, ids ``<id>``, ``<id>#2``...), as the SciTLDR paper trains; False: the first reference only.
    Validation and test score against every reference either way."""
    batch_tokens: int = 6144
    """Token budget of a batch: examples x P x T of the longest example in the batch."""
    max_batch_size: int = 64
    """Upper bound on examples per batch."""
    num_workers: int = 0
    """DataLoader worker processes."""
    limit_eval_examples: int | None = None
    """Decode and score only the first N examples of the evaluated split (None: all)."""
    eval_max_paragraphs: int | None = None
    """P for the validation and test splits (None: ``max_paragraphs``); the paper trains on 24, tests on 40."""
    on_error: OnError = OnError.fail
    """A malformed record: ``fail`` (one line, exit status 2) or ``skip`` (counted, listed in
    ``<run>/data_errors.jsonl``)."""
    cache_dir: str | None = None
    """Folder of the prepared corpora (:mod:`hiersum.data.prepared`); None: ``$HIERSUM_PREPARED_DIR`` when set,
    else ``$XDG_CACHE_HOME/hiersum/prepared`` (``~/.cache/hiersum/prepared``)."""
    prepare_workers: int | None = None
    """Processes that tokenize a split being prepared (a split of one chunk, 256 examples, is tokenized in the
    main process); None: the machine's cores. The prepared files are the same for any number."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.on_error = OnError.coerce(self.on_error, "data.on_error")
        self.paragraph_markers = list(self.paragraph_markers)  # a ListConfig from the YAML: a plain list
        check_line_layout(self, "data.")
        if self.eval_max_paragraphs is not None and self.eval_max_paragraphs < 1:
            raise ValueError(f"data.eval_max_paragraphs must be >= 1 or null, found {self.eval_max_paragraphs}")
        if self.prepare_workers is not None and self.prepare_workers < 1:
            raise ValueError(f"data.prepare_workers must be >= 1 or null, found {self.prepare_workers}")
        for name in ("max_target_tokens", "batch_tokens", "max_batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"data.{name} must be >= 1, found {getattr(self, name)}")
        check(self.num_workers >= 0, "data.num_workers", ">= 0", self.num_workers)


LINE_LAYOUT_FIELDS: tuple[str, ...] = ("document_separator", "paragraph_markers", "summary_prefix")
"""The :class:`DataConfig` fields that say how a line of the line-pair layout (``data.format=line_pairs``,
:mod:`hiersum.data.formats.line_pairs`) holds an example: what its reader takes (``FormatSpec.options``), what a
prepared split's key holds besides the format, and what a ``data=`` preset gives and a checkpoint passes on with
its format (``hiersum evaluate``)."""


def check_line_layout(config: object, key_prefix: str) -> None:
    """``ValueError`` for an empty separator, marker or prefix of ``config`` (None is none; keys named
    ``<key_prefix><field>``)."""
    for name in ("document_separator", "summary_prefix"):
        value = getattr(config, name, None)
        check(value is None or (isinstance(value, str) and value != ""), f"{key_prefix}{name}",
              "a non-empty string or null", value)
    markers = getattr(config, "paragraph_markers", None) or []
    check(all(isinstance(marker, str) and marker for marker in markers), f"{key_prefix}paragraph_markers",
          "a list of non-empty strings", markers)
