"""Kept for compatibility: the prepared corpora (the on-disk cache) live in :mod:`hiersum.data.cache`."""

from hiersum.data.cache import (
    PREPARED_DIR_VARIABLE,
    PreparedSplit,
    corpus_tokenizer,
    prepare_split,
    prepare_tokenizer,
    prepared_root,
    split_manifest,
)

__all__ = ["PREPARED_DIR_VARIABLE", "PreparedSplit", "corpus_tokenizer", "prepare_split", "prepare_tokenizer",
           "prepared_root", "split_manifest"]
