"""Paragraph selection, the one type of it (:class:`ParagraphSelection`): how an example's text becomes the paragraphs
the model reads, which of them it keeps and how many tokens of each.

Every front end reads this type. :class:`hiersum.config.DataConfig` extends it, so its keys are ``data``'s
(``data.max_paragraphs=24``: training, ``prepare``, ``evaluate``) and a checkpoint records it with the data settings;
``hiersum summarize``, ``hiersum serve`` and :meth:`hiersum.inference.Summarizer.summarize` take its fields as
:class:`SelectionOverrides` of the checkpoint's (``max_paragraphs=3``, ``paragraphs=sentences``; unset: the
checkpoint's); ``hiersum evaluate`` takes the checkpoint's but for the ``data.<field>`` its command line gives.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

from hiersum.config.checks import check
from hiersum.config.choices import Paragraphs, Selection, TextNormalization

_CHOICES = (("selection", Selection), ("paragraphs", Paragraphs), ("text_normalization", TextNormalization))
"""The fields of :class:`ParagraphSelection` given as a choice (a string in a config): coerced to their enum."""


def _coerce_choices(config: Any, key_prefix: str, *, none_unset: bool = False) -> None:
    """Each choice field of ``config`` as its enum (with ``none_unset``, as :class:`SelectionOverrides` has it, None
    stays: the checkpoint's); a bad value is the one-line error naming ``<key_prefix><field>``."""
    for name, kind in _CHOICES:
        if not (none_unset and getattr(config, name) is None):
            setattr(config, name, kind.coerce(getattr(config, name), f"{key_prefix}{name}"))


@dataclass
class ParagraphSelection:
    """How paragraphs are made, chosen and cut; defaults = ``conf/data/sample.yaml``'s."""

    KEY_PREFIX: ClassVar[str] = ""
    """What the option names start with in errors (``data.`` for :class:`hiersum.config.DataConfig`)."""

    max_paragraphs: int = 12
    """P: paragraphs kept per example."""
    max_paragraph_tokens: int = 48
    """T: tokens kept per paragraph."""
    paragraphs: Paragraphs = Paragraphs.given
    """How a document's text becomes paragraphs: ``given`` (as the reader gives them) or ``sentences`` (split into
    sentences, grouped into paragraphs of at most ``max_paragraph_tokens`` tokens: text without paragraph breaks,
    such as CNN/DailyMail; :mod:`hiersum.data.paragraphs`)."""
    selection: Selection = Selection.first
    """``first`` (document order), ``round_robin`` (first paragraph of each document, then second...),
    ``tfidf`` (tf-idf similarity to the title or centroid) or ``ranker`` (a trained ranker, ``ranker``)."""
    ranker: str | None = None
    """The ranker checkpoint (``hiersum train-ranker``) that orders paragraphs when ``selection=ranker``."""
    title_paragraph: bool = True
    """Put the example's title (topic or entity), when it has one, as paragraph 0."""
    text_normalization: TextNormalization = TextNormalization.none
    """How the text (title, paragraphs, training target) is normalized before the paragraph rule and the tokenizer:
    ``none`` (as given) or ``ptb`` (Penn-Treebank-style tokens as CNN/DailyMail's tokenized release has them, so
    raw text reaches its model as its training text did; summaries are then detokenized for reading:
    :mod:`hiersum.data.normalization`). A checkpoint without it (an earlier version) reads ``none``."""

    def __post_init__(self) -> None:
        key = self.KEY_PREFIX
        _coerce_choices(self, key)
        if self.selection is Selection.ranker and not self.ranker:
            raise ValueError(f"{key}selection=ranker needs {key}ranker=PATH (a checkpoint of hiersum train-ranker)")
        for name in ("max_paragraphs", "max_paragraph_tokens"):
            check(getattr(self, name) >= 1, f"{key}{name}", ">= 1", getattr(self, name))


SELECTION_FIELDS: tuple[str, ...] = tuple(item.name for item in fields(ParagraphSelection))
"""The names of :class:`ParagraphSelection`'s fields: the options of summarize, serve and the Python call that
override a checkpoint's selection, and the ``data`` fields evaluate takes from the checkpoint."""


@dataclass
class SelectionOverrides:
    """Each field of :class:`ParagraphSelection`, or None (the default): the checkpoint's. What ``hiersum
    summarize``, ``hiersum serve`` (flat keys: ``max_paragraphs=3``, ``paragraphs=sentences``, ``selection=ranker
    ranker=PATH``) and the Python call's keywords give; :meth:`given`, the fields set, which
    :meth:`hiersum.inference.Summarizer.selection` puts over the checkpoint's. Its fields are
    :class:`ParagraphSelection`'s, each typed ``<its type> | None`` (a test keeps them so), documented there."""

    max_paragraphs: int | None = None
    max_paragraph_tokens: int | None = None
    paragraphs: Paragraphs | None = None
    selection: Selection | None = None
    ranker: str | None = None
    title_paragraph: bool | None = None
    text_normalization: TextNormalization | None = None

    def __post_init__(self) -> None:
        _coerce_choices(self, "", none_unset=True)

    def given(self) -> dict[str, Any]:
        """The fields set (not None): what replaces the checkpoint's."""
        return {name: getattr(self, name) for name in SELECTION_FIELDS if getattr(self, name) is not None}
