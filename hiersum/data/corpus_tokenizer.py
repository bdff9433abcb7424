"""The tokenizer of a run (``tokenizer.*``): loaded from ``tokenizer.path``, or trained once on the corpus's train
split and kept beside the prepared corpora (:func:`hiersum.data.prepared.cached_text`, keyed by the split's files,
its format and layout, and the tokenizer's settings), so that every later run loads the same one."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from hiersum.config import DataConfig, OnError, TextNormalization, TokenizerConfig
from hiersum.data.formats.registry import corpus_normalization, data_format, format_spec
from hiersum.data.normalization import normalize_text
from hiersum.data.prepared import (
    PREPARED_VERSION,
    cached_text,
    file_fingerprints,
    key_digest,
    layout_key,
    prepared_root,
)
from hiersum.data.schema import Example, RecordError
from hiersum.data.tokenizer import BYTE_PIECES, SPECIAL_TOKENS, SubwordTokenizer, load_tokenizer, train_tokenizer
from hiersum.errors import UsageError


def prepare_tokenizer(config: TokenizerConfig, data: DataConfig) -> SubwordTokenizer:
    """The tokenizer of a run: loaded from ``config.path``, else trained on the train split once
    (:func:`corpus_tokenizer`). A missing or unreadable file, or a format of token ids without their
    tokenizer, is a :class:`UsageError`."""
    if config.path:
        try:
            return load_tokenizer(config.path, pad=config.pad_token, bos=config.bos_token, eos=config.eos_token)
        except (OSError, ValueError) as error:
            raise UsageError(str(error)) from None
    if format_spec(data.format).token_ids:
        raise UsageError(f"data.format={data.format} holds SentencePiece ids: give their tokenizer, e.g. "
                         "tokenizer=official_spm tokenizer.path=/path/to/spm9998_3.model")
    try:
        return corpus_tokenizer(config, data)
    except FileNotFoundError as error:
        raise UsageError(str(error)) from None


def corpus_tokenizer(config: TokenizerConfig, data: DataConfig) -> SubwordTokenizer:
    """The tokenizer trained on the train split of ``data`` with ``config`` (vocabulary size, case):
    trained once, kept in the cache (keyed by the train split's files, the format and ``config``) and
    loaded from there by every later run. ``data.on_error=fail``: a malformed record raises its
    :class:`RecordError`; ``skip``: it is left out."""
    spec, normalization = data_format(data), corpus_normalization(data)
    key = {"version": PREPARED_VERSION, "format": data.format, **layout_key(data),
           "inputs": file_fingerprints(spec.input_files(data.path, "train")),
           "vocab_size": config.vocab_size, "lowercase": config.lowercase,
           **({"byte_fallback": True} if config.byte_fallback else {}),  # the keys of caches made before them
           # the text the tokenizer learns from is normalized as training's
           **({"text_normalization": str(normalization)} if normalization is not TextNormalization.none else {})}
    folder = prepared_root(data) / f"tokenizer-{key_digest(key)}"

    def train() -> str:
        train_file = spec.split_location(data.path, "train")
        texts = list(_training_texts(spec.split_records(data.path, "train"), data.on_error, normalization))
        tokenizer = train_tokenizer(texts, vocab_size=config.vocab_size, lowercase=config.lowercase,
                                    byte_fallback=config.byte_fallback)
        learned = tokenizer.vocab_size - len(SPECIAL_TOKENS) - (len(BYTE_PIECES) if config.byte_fallback else 0)
        if learned < MIN_LEARNED_TOKENS:
            raise UsageError(f"{train_file}: expected text to train the tokenizer on, found {len(texts)} texts giving "
                             f"{learned} tokens (at least {MIN_LEARNED_TOKENS}); check data.path, or give "
                             "tokenizer.path")
        return tokenizer.to_str()

    path = cached_text(folder, "tokenizer.json", key, train)
    return SubwordTokenizer.from_str(path.read_text(encoding="utf-8"))


MIN_LEARNED_TOKENS = 16
"""A corpus tokenizer that learns fewer tokens than this (beyond the special ones) was trained on (near) nothing."""


def _training_texts(records: Iterable[Example | RecordError], on_error: OnError,
                    normalization: TextNormalization) -> Iterator[str]:
    for item in records:
        if isinstance(item, RecordError):
            if on_error is OnError.fail:
                raise item
            continue
        texts = [item.title, *item.references, *(p for d in item.documents for p in d)]
        yield from (normalize_text(text, normalization) for text in texts if text)
