"""Out-of-vocabulary source words by their text (``model.copy_oov``): the per-example extended vocabulary of See et
al. (2017) and OpenNMT-py (``src_map`` and ``alignment``) made from the tokenizer's unknown tokens.

When an example is encoded, each distinct text that the tokenizer's unknown token (``<unk>``) stands for in its
kept source (the characters the token's offsets span:
:meth:`hiersum.data.tokenizer.SubwordTokenizer.encode_batch_spelled`) gets the extended id V + k, k in order of
first appearance (paragraph by paragraph, as the model reads them), the same text the same id; a target ``<unk>``
standing for one of those texts gets its id (the copy attention alone can write it:
:mod:`hiersum.model.extended_embedding`), any other target ``<unk>`` stays ``<unk>``. The texts, in order, are the
example's :attr:`~hiersum.data.schema.EncodedExample.oov_words`, which decoding reads back
(:meth:`~hiersum.data.tokenizer.SubwordTokenizer.decode`). Torch-free: the tokenizing processes of ``hiersum
prepare`` run it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hiersum.data.tokenizer import SpelledIds


@dataclass(frozen=True)
class ExtendedIds:
    """An example's ids with its out-of-vocabulary words as extended ids."""

    paragraphs: list[list[int]]
    """The source paragraphs, each ``<unk>`` as V + k."""
    target: list[int]
    """The target, each ``<unk>`` whose text the source holds as its V + k."""
    oov_words: list[str]
    """The text of V + k at position k."""


def extended_ids(paragraphs: Sequence[SpelledIds], target: SpelledIds | None, *, vocab_size: int) -> ExtendedIds:
    """The extended ids (module docstring) of an example whose kept source ``paragraphs`` and target (None: none)
    are given already cut to their lengths; ``vocab_size``: V."""
    numbered: dict[str, int] = {}
    for paragraph in paragraphs:
        for position in sorted(paragraph.unknown):
            numbered.setdefault(paragraph.unknown[position], vocab_size + len(numbered))
    source = [_through(paragraph, numbered) for paragraph in paragraphs]
    return ExtendedIds(source, [] if target is None else _through(target, numbered), list(numbered))


def _through(spelled: SpelledIds, numbered: dict[str, int]) -> list[int]:
    """``spelled``'s ids, each unknown token whose text ``numbered`` holds as that text's extended id."""
    ids = list(spelled.ids)
    for position, text in spelled.unknown.items():
        ids[position] = numbered.get(text, ids[position])
    return ids


def cut(spelled: SpelledIds, length: int) -> SpelledIds:
    """The first ``length`` tokens of ``spelled`` (the unknown ones among them)."""
    return SpelledIds(spelled.ids[:length], {position: text for position, text in spelled.unknown.items()
                                             if position < length})
