"""``decode``: the search settings of every decoding, the one type of them (:class:`DecodeConfig`).

The command line (``decode.*``, ``conf/decode/default.yaml``), ``hiersum serve`` (a request's ``options``) and the
Python API (:func:`hiersum.decoding.generate`, whose ``GenerationOptions`` is this class) read the same fields, with
one set of defaults and one check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hiersum.config.choices import Stopping
from hiersum.errors import UsageError

OFFICIAL_SEARCH: dict[str, Any] = {"beam_size": 5, "alpha": 0.0, "min_length": 0, "max_length": 100,
                                   "stopping": "official"}
"""The search settings of the official hiersumm code (:meth:`DecodeConfig.official`)."""


@dataclass
class DecodeConfig:
    """Search settings (beam_size 1 is greedy decoding); defaults = ``conf/decode/default.yaml`` (beam 4, alpha
    0.6, 5 to 80 tokens, stopping ``full``). Also importable as :class:`hiersum.decoding.GenerationOptions`; the
    official hiersumm search is :meth:`official`."""

    beam_size: int = 4
    alpha: float = 0.6
    """GNMT length penalty exponent: score / ((5 + len) / 6) ** alpha."""
    min_length: int = 5
    max_length: int = 80
    min_length_per_source_token: float = 0.0
    """EOS is forbidden before ``min_length`` + this x the source tokens the model reads (each example's real
    tokens, rounded, at most ``max_length``), as fairseq's ``max_len_a`` scales a maximum with the source: summaries
    as long as their sources ask. 0: ``min_length`` for every example."""
    batch_size: int = 16
    """Examples per decoding batch (each expanded to beam_size rows)."""
    stopping: Stopping = Stopping.full
    """``full``: an example ends once beam_size hypotheses ended (fairseq / HF style);
    ``official``: it ends when its best beam ends (the official hiersumm rule)."""
    no_repeat_ngram_size: int = 0
    """Forbid a token that would repeat an n-gram of this size in a hypothesis (3: trigram
    blocking as PreSumm / fairseq); 0 turns it off."""
    coverage_penalty: float = 0.0
    """beta of the summary coverage penalty of OpenNMT-py (Gehrmann et al., 2018): a beam's score loses beta x
    sum_i max(0, c_i - 1), c_i the copy attention source position i has received over its steps, so that attending
    again to what it already copied costs (:func:`hiersum.decoding.search.beam_search`). Needs
    ``model.copy_attention``; beam search only (a greedy row has one penalty for every token). 0: none."""
    n_best: int = 1
    """Hypotheses returned per example, best first (at most beam_size; 1 with greedy)."""
    greedy: bool = False
    """Greedy search (argmax at each step) instead of beam search; beam_size is ignored."""
    max_steps: int | None = None
    """Hard cap on decoding steps, over max_length and min_length (None: no cap)."""
    compile_step: bool = False
    """Compile the decoding step over a self-attention cache of fixed size (max_length + 1), with CUDA
    graphs on CUDA; the same summaries as eager. Off by default: on the 2-core CPU it does not gain
    (docs/benchmarks.md, "Compiled decoding step")."""

    def __post_init__(self) -> None:
        self.stopping = Stopping.coerce(self.stopping, "decode.stopping")
        if self.beam_size < 1:
            raise ValueError(f"decode.beam_size must be >= 1, found {self.beam_size}")
        if self.no_repeat_ngram_size < 0:
            raise ValueError(f"decode.no_repeat_ngram_size must be >= 0, found {self.no_repeat_ngram_size}")
        if not 1 <= self.n_best <= (1 if self.greedy else self.beam_size):
            raise ValueError(
                f"decode.n_best={self.n_best} must be in [1, decode.beam_size] (1 with decode.greedy=true)"
            )
        if self.coverage_penalty < 0:
            raise ValueError(f"decode.coverage_penalty must be >= 0, found {self.coverage_penalty}")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"decode.max_steps must be >= 1 or null, found {self.max_steps}")
        if self.min_length_per_source_token < 0:
            raise ValueError(
                f"decode.min_length_per_source_token must be >= 0, found {self.min_length_per_source_token}")
        if self.max_length < 1 or self.min_length < 0:
            raise ValueError(
                f"decode.max_length must be >= 1 and decode.min_length >= 0; found {self.max_length}, {self.min_length}"
            )

    def check_lengths(self) -> DecodeConfig:
        """Itself, once ``min_length <= max_length`` holds (else a :class:`UsageError`). Checked on the search
        settings a run decodes with, not in ``__post_init__``: a command line that gives ``decode.min_length=85`` to
        a checkpoint whose run decoded 55 to 120 tokens is refused only if the merged settings are wrong, not against
        the default max_length 80."""
        if self.max_length < self.min_length:
            raise UsageError(f"decode.max_length={self.max_length} must be >= decode.min_length={self.min_length}")
        return self

    @classmethod
    def official(cls, **changes: Any) -> DecodeConfig:
        """The official hiersumm search (:data:`OFFICIAL_SEARCH`: beam 5, no length penalty, 0 to 100 tokens,
        an example ends when its best beam ends), with ``changes``."""
        return cls(**{**OFFICIAL_SEARCH, **changes})

    @classmethod
    def from_config(cls, decode: DecodeConfig) -> DecodeConfig:
        """``decode`` itself: the search settings of a decode config (kept for the callers of
        ``GenerationOptions.from_config``, from when the two were separate types)."""
        return decode
