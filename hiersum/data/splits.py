"""Kept for compatibility: the splits of a corpus folder live in :mod:`hiersum.data.corpus_splits`."""

from hiersum.data.corpus_splits import (
    DATA_ERRORS,
    CorpusSplits,
    existing_split_files,
    read_text_split,
    write_data_errors,
)

__all__ = ["DATA_ERRORS", "CorpusSplits", "existing_split_files", "read_text_split", "write_data_errors"]
