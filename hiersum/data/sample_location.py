"""Where the default corpus lives: ``<paths.data_dir>/sample`` when it is there, else a cached copy.

``conf/data/sample.yaml`` sets ``path: ${hiersum.sample_dir:${paths.data_dir}}``. In a checkout the
resolver returns the committed ``data/sample``; anywhere else (``hiersum train`` run from an empty
folder with the wheel installed) it builds the corpus once with :mod:`hiersum.data.sample_generator` (the
generator of the committed files, with its defaults, so the bytes are the same) into
``$XDG_CACHE_HOME/hiersum/sample-<fingerprint>`` (``~/.cache/hiersum/...`` by default) and returns
that folder. The fingerprint hashes the generator's source, so a changed generator gets a new
folder. The corpus is written into a temporary folder that is then renamed
(:func:`hiersum.atomic.publishing_directory`), so a concurrent or interrupted run never sees a partial corpus.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

from hiersum.atomic import publishing_directory
from hiersum.data import sample_generator

log = logging.getLogger(__name__)

RESOLVER = "hiersum.sample_dir"
"""OmegaConf resolver: ``${hiersum.sample_dir:DATA_DIR}`` -> ``DATA_DIR/sample`` or the cached corpus."""


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/hiersum``, ``~/.cache/hiersum`` when the variable is unset or empty."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "hiersum"


def generator_fingerprint() -> str:
    """12 hex digits of the SHA-256 of the generator's source (its seeds and sizes included)."""
    source = Path(sample_generator.__file__).read_bytes()
    return hashlib.sha256(source).hexdigest()[:12]


def cached_sample_dir(root: str | Path | None = None) -> Path:
    """The generated sample corpus under ``root`` (default :func:`cache_root`), built on first use."""
    root = Path(root) if root is not None else cache_root()
    target = root / f"sample-{generator_fingerprint()}"
    if target.is_dir():
        return target
    log.info("generating the synthetic sample corpus into %s", target)
    with publishing_directory(target, if_exists="keep") as temporary:  # another process's (identical) corpus kept
        sample_generator.write_sample_corpus(temporary)
    return target


def sample_dir(data_dir: str | Path) -> str:
    """``<data_dir>/sample`` when that folder exists, else :func:`cached_sample_dir`."""
    local = Path(data_dir) / "sample"
    return str(local if local.is_dir() else cached_sample_dir())


def is_sample_corpus(path: str | Path) -> bool:
    """Whether ``path`` (a corpus a model was trained on, as its checkpoint records it) names the synthetic
    sample corpus: a folder ``sample`` (``<data_dir>/sample``) or ``sample-<fingerprint>`` (the cached copy).
    By name only: the corpus need not be on this machine."""
    name = Path(path).name
    return name == "sample" or (name.startswith("sample-") and len(name) == len("sample-") + 12)
