"""The packed layout of a source grid now lives in :mod:`hiersum.data.packing` (``collate`` makes it once per
batch); its names stay importable from here."""

from hiersum.data.packing import (
    BUCKET_WIDTHS,
    MIN_BUCKET_PARAGRAPHS,
    PackedGrid,
    ParagraphBucket,
    bucket_width,
)

__all__ = ["BUCKET_WIDTHS", "MIN_BUCKET_PARAGRAPHS", "PackedGrid", "ParagraphBucket", "bucket_width"]
