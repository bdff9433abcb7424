"""Kept for compatibility: where the sample corpus lives is :mod:`hiersum.data.sample_location`."""

from hiersum.data.sample_location import RESOLVER, cache_root, cached_sample_dir, register_resolver, sample_dir

__all__ = ["RESOLVER", "cache_root", "cached_sample_dir", "register_resolver", "sample_dir"]
