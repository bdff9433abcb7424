"""The paragraph rule (``data.paragraphs``): how a document's text becomes the paragraphs that selection chooses
from and the encoder reads as rows of its [P, T] grid.

``given``
    The paragraphs as the reader gives them (blank lines in native JSONL and text files, an abstract's sentences
    in SciTLDR, an email's lines in AESLC). Nothing is changed.
``sentences``
    For text without paragraph breaks (a CNN/DailyMail article is one line of 30-40 sentences, so under ``given``
    it is one paragraph and the inter-paragraph layers have nothing to work across). Each given paragraph is split
    into sentences by hiersum's one sentence splitter (NLTK's Punkt, :func:`hiersum.data.sentences.split_sentences`,
    which lead-3, the oracle, LexRank and ROUGE-Lsum split with too); then consecutive
    sentences are grouped, in order, into paragraphs of at most ``budget`` subword tokens (``data.max_paragraph_
    tokens``, the grid's T, so that a paragraph fills its row and nothing of it is cut), counted with the model's
    tokenizer. A sentence longer than the budget is a paragraph of its own (cut to T when encoded). Sentences never
    join across given paragraphs or documents.

Punkt's errors (:mod:`hiersum.data.sentences`) matter little once sentences are grouped into paragraphs.

The rule is applied by :func:`hiersum.data.selection.encode_examples`, which every path from text to ids goes
through (``hiersum prepare`` and so train and evaluate, ``hiersum summarize``, ``hiersum serve`` and the Python
call); it is part of the selection settings a checkpoint records, so they all split a text as its model was trained.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hiersum.config.choices import Paragraphs
from hiersum.data.schema import Example
from hiersum.data.sentences import split_sentences
from hiersum.data.tokenizer import SubwordTokenizer


def group_sentences(sentences: Sequence[str], lengths: Sequence[int], budget: int) -> list[str]:
    """Consecutive ``sentences`` (of ``lengths`` tokens each) joined with spaces into paragraphs of at most
    ``budget`` tokens; a sentence over the budget is a paragraph of its own."""
    paragraphs: list[str] = []
    current: list[str] = []
    used = 0
    for sentence, length in zip(sentences, lengths, strict=True):
        if current and used + length > budget:
            paragraphs.append(" ".join(current))
            current, used = [], 0
        current.append(sentence)
        used += length
    if current:
        paragraphs.append(" ".join(current))
    return paragraphs


def apply_paragraph_rule(examples: Sequence[Example], tokenizer: SubwordTokenizer, rule: str,
                         budget: int) -> list[Example]:
    """``examples`` with their documents' paragraphs made by ``rule`` (see the module docstring); ``given``
    returns them unchanged. The title and the references are kept as they are."""
    if rule == "given":
        return list(examples)
    if rule != "sentences":
        Paragraphs.coerce(rule, "data.paragraphs")  # an unknown rule: its one-line ValueError
    split = [[[split_sentences(paragraph) for paragraph in document] for document in example.documents]
             for example in examples]
    # one batch for every sentence of every example: the tokenizer's batch encoding pays its fixed cost once
    flat = [sentence for example in split for document in example for paragraph in document for sentence in paragraph]
    lengths = iter([len(ids) for ids in tokenizer.encode_batch(flat)] if flat else [])
    regrouped = []
    for example, documents in zip(examples, split, strict=True):
        new_documents = []
        for document in documents:
            paragraphs = [text for sentences in document
                          for text in group_sentences(sentences, [next(lengths) for _ in sentences], budget)]
            new_documents.append(paragraphs)  # kept even if empty: provenance indexes the documents
        regrouped.append(replace(example, documents=new_documents))
    return regrouped
