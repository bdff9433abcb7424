"""The summarizer's decoding state: what :class:`hiersum.model.summarizer.HierSum` continues a batch of sequences
from, step after step. It holds the decoder's state (:class:`hiersum.model.cache.DecoderState`, what the decoder put
there) and what the model adds to it, the copy attention's memory and its coverage (``model.copy_attention``,
``model.coverage``), and makes the row selections of the search (:class:`hiersum.decoding.search.SearchState`).

Dimensions
    N  rows (examples, or examples x beams while decoding)
    B' memory entries (examples; N = B' x G, the G beams of an example consecutive)
    M  memory length
    V  vocabulary

The rows are the decoder state's: the copy memory is one entry per example, as the decoder's memory is (row r reads
entry r // G), and the coverage one vector per row; each selection moves them as the decoder's state moves its own,
reading the row layout the copy part of the decoder contract names (:class:`hiersum.model.decoder_contract.CopySource`).
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from hiersum.model.cache import DecoderState
from hiersum.model.copy_attention import CopyMemory


@dataclass
class SummarizerState:
    """Everything :class:`~hiersum.model.summarizer.HierSum` needs to continue a batch of sequences.

    As the decoder's state, it is consumed by the call that continues it (the decoder writes into its cache, a
    coverage step adds into :attr:`coverage` in place): continue a state only once, or copy it first with
    :meth:`reorder`.
    """

    decoder: DecoderState
    """The decoder's state (its memory keys/values, self-attention cache, length and row layout)."""
    copy: CopyMemory | None = None
    """The copy attention's memory (``model.copy_attention``), one entry per example; None without copying."""
    coverage: Tensor | None = None
    """[N, M] fp32, per row the copy attention each memory position has received so far (``model.coverage``; the
    step adds its attention in place); None without coverage. Rows move with the beams, as the cache does."""

    @property
    def rows(self) -> int:
        """N, rows of the state."""
        return self.decoder.rows

    @property
    def length(self) -> int:
        """S, target tokens already consumed (the position of the next token)."""
        return self.decoder.length

    def rows_of(self, examples: Tensor) -> Tensor:
        """The rows [b * G] of examples ``examples`` [b] (long), group by group."""
        return self.decoder.rows_of(examples)

    def tile(self, beam_size: int) -> SummarizerState:
        """Repeat every row ``beam_size`` times (consecutively); the memories are not copied."""
        coverage = None if self.coverage is None else self.coverage.repeat_interleave(beam_size, dim=0)  # (N*K, M)
        return SummarizerState(self.decoder.tile(beam_size), self.copy, coverage)

    def reorder_beams(self, indices: Tensor) -> SummarizerState:
        """Rows ``indices`` [N]: ``indices[r]`` must be a row of r's own group (a beam of the same example)."""
        return SummarizerState(self.decoder.reorder_beams(indices), self.copy, self._coverage_rows(indices))

    def select_examples(self, examples: Tensor) -> SummarizerState:
        """Keep examples ``examples`` [b] (long, into the B' entries) and their rows."""
        rows = self.decoder.rows_of(examples)  # (b*G,)
        copy = None if self.copy is None else self.copy.index_select(examples)
        return SummarizerState(self.decoder.select_examples(examples), copy, self._coverage_rows(rows))

    def reorder(self, indices: Tensor) -> SummarizerState:
        """Rows ``indices`` [N'] (long, into the N rows), any of them, repeats allowed; one memory entry per row
        (costly, and this state stays usable: :meth:`hiersum.model.cache.DecoderState.reorder`)."""
        copy = None if self.copy is None else self.copy.index_select(self.decoder.entries_of(indices))
        return SummarizerState(self.decoder.reorder(indices), copy, self._coverage_rows(indices))

    def _coverage_rows(self, rows: Tensor) -> Tensor | None:
        """The coverage of rows ``rows`` [N'] (long), [N', M]; None without coverage."""
        return None if self.coverage is None else self.coverage.index_select(0, rows)


@dataclass
class SummarizerStep:
    """One decoding step of every live row (what :meth:`HierSum.step` returns to the search)."""

    log_probs: Tensor
    """[N, V] log p(next token | prefix, source)."""
    state: SummarizerState
    """The state after consuming the fed tokens."""
    attention: Tensor | None = None
    """[N, M] fp32 the step's copy attention over the memory (``model.copy_attention``; zeros where nothing is
    copied), what a beam search's coverage penalty adds up; None without copying."""
