"""Kept for compatibility: the data-format registry lives in :mod:`hiersum.data.formats.registry`."""

from hiersum.data.formats.registry import (
    FORMATS,
    SPLIT_FILES,
    FormatSpec,
    format_spec,
    line_formats,
    register_format,
    text_format,
    unregister_format,
    validate_format,
)

__all__ = ["FORMATS", "SPLIT_FILES", "FormatSpec", "format_spec", "line_formats", "register_format", "text_format",
           "unregister_format", "validate_format"]
