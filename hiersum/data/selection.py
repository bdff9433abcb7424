"""Paragraph selection and encoding: Example (text) -> EncodedExample (ids in a P x T grid)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hiersum.config import DataConfig
from hiersum.data.graph import paragraph_graph
from hiersum.data.schema import EncodedExample, Example
from hiersum.data.tokenizer import SubwordTokenizer

TITLE_DOCUMENT = -1
"""Provenance document index of the title paragraph."""
SELECTION_FIELDS = ("max_paragraphs", "max_paragraph_tokens", "max_target_tokens", "selection", "title_paragraph")
"""The ``DataConfig`` fields that shape the model's input: evaluation and summarization take them from
the checkpoint unless the command line gives them (``data.<field>=`` / ``<field>=``)."""


@dataclass(frozen=True)
class SelectionConfig:
    """How paragraphs are chosen and cut (see ``DataConfig`` for the meaning of each field)."""

    max_paragraphs: int
    max_paragraph_tokens: int
    max_target_tokens: int
    selection: str = "first"
    title_paragraph: bool = True
    graph: str = "none"
    """Paragraph graph stored on each example (``model.graph``; see ``hiersum/data/graph.py``)."""


def selection_config(config: DataConfig, *, graph: str = "none", evaluation: bool = False) -> SelectionConfig:
    """Paragraph selection of ``config``; ``graph``: the model's paragraph graph (``model.graph``);
    ``evaluation``: for a validation or test split (``data.eval_max_paragraphs`` applies)."""
    max_paragraphs = config.max_paragraphs
    if evaluation and config.eval_max_paragraphs:
        max_paragraphs = config.eval_max_paragraphs
    return SelectionConfig(
        max_paragraphs=max_paragraphs,
        max_paragraph_tokens=config.max_paragraph_tokens,
        max_target_tokens=config.max_target_tokens,
        selection=config.selection,
        title_paragraph=config.title_paragraph,
        graph=graph,
    )


def order_paragraphs(documents: Sequence[Sequence[str]], rule: str) -> list[tuple[int, int]]:
    """(document, paragraph) indices in selection order.

    ``first``: document order. ``round_robin``: the first paragraph of every document,
    then every second paragraph, and so on.
    """
    if rule == "first":
        return [(d, p) for d, doc in enumerate(documents) for p in range(len(doc))]
    if rule == "round_robin":
        longest = max((len(doc) for doc in documents), default=0)
        return [(d, p) for p in range(longest) for d, doc in enumerate(documents) if p < len(doc)]
    raise ValueError(f"unknown paragraph selection rule {rule!r}: expected 'first' or 'round_robin'")


def encode_examples(
    examples: Sequence[Example], tokenizer: SubwordTokenizer, config: SelectionConfig
) -> list[EncodedExample]:
    """Select up to P paragraphs per example, tokenize them and cut each to T tokens.

    With ``title_paragraph`` the title (when present) is the first paragraph, so the
    model knows which entity or topic the summary is about. With ``graph`` other than ``none``
    each example carries the graph of its kept paragraphs, computed from their full text.
    """
    encoded = []
    for example in examples:
        order = order_paragraphs(example.documents, config.selection)
        slots = config.max_paragraphs
        provenance: list[tuple[int, int]] = []
        texts: list[str] = []
        if config.title_paragraph and example.title:
            provenance.append((TITLE_DOCUMENT, 0))
            texts.append(example.title)
            slots -= 1
        kept = order[: max(slots, 0)]
        provenance += kept
        texts += [example.documents[d][p] for d, p in kept]
        ids = tokenizer.encode_batch(texts + example.references[:1])
        paragraphs = [p[: config.max_paragraph_tokens] for p in ids[: len(texts)]]
        target = ids[len(texts)][: config.max_target_tokens] if example.references else []
        encoded.append(EncodedExample(
            id=example.id,
            paragraphs=paragraphs,
            target=target,
            references=list(example.references),
            provenance=provenance,
            n_dropped_paragraphs=len(order) - len(kept),
            graph=paragraph_graph(texts, config.graph),
        ))
    return encoded
