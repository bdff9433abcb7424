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
    tokenizer. A sentence longer than the budget is split into pieces of at most ``budget`` tokens
    (:func:`split_to_budget`: cut where a token starts a word, found with the tokenizer's offsets), which are then
    grouped as sentences are, so no token of it is lost. Sentences never join across given paragraphs or documents.

Punkt's errors (:mod:`hiersum.data.sentences`) matter little once sentences are grouped into paragraphs.

:func:`paragraphed` (the text normalization, then the rule) is the one place the rule is applied, once per record;
every consumer reads its output: encoding (:func:`hiersum.data.selection.encode_examples`, on every path from text
to ids: ``hiersum prepare`` and so train and evaluate, ``hiersum summarize``, ``hiersum serve`` and the Python
call), the attended paragraphs of a summary (the record :meth:`hiersum.inference.Summarizer.lines` encoded), the
ranker's labels and training examples (:func:`hiersum.data.ranker_data.split_labels`, whose cache key holds
:func:`paragraph_rule_key`) and the strategies of selection evaluation, the oracle among them
(:func:`hiersum.data.corpus_splits.paragraphed_split`). The rule is part of the selection settings a checkpoint
records, so they all split a text as its model was trained.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hiersum.config.choices import Paragraphs, TextNormalization
from hiersum.config.selection import ParagraphSelection
from hiersum.data.normalization import normalize_examples
from hiersum.data.schema import Example
from hiersum.data.sentences import split_sentences
from hiersum.data.tokenizer import SubwordTokenizer

LONG_SENTENCES = "split"
"""What the rule ``sentences`` does with a sentence over the budget, in the keys of what it made (prepared corpora,
the ranker's labels): ``split`` since it splits one (earlier, such a sentence was a paragraph cut to T at encoding,
and those keys had no such field)."""


def paragraphed(examples: Sequence[Example], tokenizer: SubwordTokenizer | None,
                selection: ParagraphSelection) -> list[Example]:
    """``examples`` with their text normalized (``selection.text_normalization``; :mod:`hiersum.data.normalization`)
    and the paragraphs of ``selection``'s paragraph rule (``selection.paragraphs``, budget
    ``selection.max_paragraph_tokens``; unchanged under ``given``): the paragraphs encoding selects from (which an
    encoded example's ``provenance`` indexes), the ranker is trained and labelled on and selection evaluation ranks.
    ``tokenizer`` counts the tokens of the rule ``sentences``: the model's (None only under ``given``)."""
    normalized = normalize_examples(examples, selection.text_normalization)
    return apply_paragraph_rule(normalized, tokenizer, selection.paragraphs, selection.max_paragraph_tokens)


def paragraph_rule_key(selection: ParagraphSelection) -> dict[str, Any]:
    """What :func:`paragraphed` depends on besides the text and the tokenizer, for the key of what is made from its
    paragraphs: empty under ``given`` without normalization (the keys made before this existed stay valid);
    ``text_normalization`` when it normalizes; under ``sentences`` the rule, its budget and :data:`LONG_SENTENCES`
    (the caller adds the tokenizer, which counts the tokens)."""
    key: dict[str, Any] = {}
    if selection.text_normalization is not TextNormalization.none:
        key["text_normalization"] = str(selection.text_normalization)
    if selection.paragraphs is Paragraphs.sentences:
        key.update(paragraphs=str(selection.paragraphs), max_paragraph_tokens=selection.max_paragraph_tokens,
                   long_sentences=LONG_SENTENCES)
    return key


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


def _cut_positions(text: str, starts: Sequence[int], budget: int) -> list[int]:
    """Where to cut ``text`` (its tokens starting at the characters ``starts``) into windows of at most ``budget``
    tokens: each cut at the last token of the window that starts a word (a space at or before its start: a
    Metaspace token's offsets hold its space, a WordPiece token's do not), else, in a word longer than the budget, at
    the window's last token that starts after the window's first."""
    def starts_word(index: int) -> bool:
        start = starts[index]
        return text[start].isspace() or (start > 0 and text[start - 1].isspace())

    cuts, first = [], 0
    while len(starts) - first > budget:
        window = [index for index in range(first + budget, first, -1) if starts[index] > starts[first]]
        cut = next((index for index in window if starts_word(index)), window[0] if window else None)
        if cut is None:  # one character of more tokens than the budget (byte pieces): left to encoding's cut
            break
        cuts.append(starts[cut])
        first = cut
    return cuts


def split_to_budget(text: str, tokenizer: SubwordTokenizer, budget: int) -> list[tuple[str, int]]:
    """``text`` as pieces of at most ``budget`` tokens of ``tokenizer``, in order, each with its token count: cut at
    token boundaries that start a word (the tokenizer's offsets), so that each piece encodes to the tokens it had in
    ``text`` (a word is tokenized alone under hiersum's Metaspace BPE, SentencePiece and WordPiece) and no token is
    lost. A piece that still encodes to more (a tokenizer whose tokens depend on what precedes a word) is cut again
    by its own tokens. A text within the budget is one piece."""
    (offsets,) = tokenizer.token_offsets([text])
    cuts = _cut_positions(text, [start for start, _ in offsets], budget)
    if not cuts:
        return [(text, len(offsets))]
    bounds = [0, *cuts, len(text)]
    pieces = [text[start:end].strip() for start, end in zip(bounds, bounds[1:], strict=False)]
    return [part for piece in pieces if piece for part in split_to_budget(piece, tokenizer, budget)]


def _units(sentences: Sequence[str], lengths: Sequence[int], tokenizer: SubwordTokenizer,
           budget: int) -> tuple[list[str], list[int]]:
    """``sentences`` with those over the ``budget`` replaced by their pieces (:func:`split_to_budget`), and the
    token count of each."""
    units: list[tuple[str, int]] = []
    for sentence, length in zip(sentences, lengths, strict=True):
        units += split_to_budget(sentence, tokenizer, budget) if length > budget else [(sentence, length)]
    return [text for text, _ in units], [length for _, length in units]


def apply_paragraph_rule(examples: Sequence[Example], tokenizer: SubwordTokenizer | None, rule: str,
                         budget: int) -> list[Example]:
    """``examples`` with their documents' paragraphs made by ``rule`` (see the module docstring); ``given``
    returns them unchanged (and needs no ``tokenizer``). The title and the references are kept as they are."""
    if rule == "given":
        return list(examples)
    if rule != "sentences":
        Paragraphs.coerce(rule, "data.paragraphs")  # an unknown rule: its one-line ValueError
    if tokenizer is None:
        raise ValueError("data.paragraphs=sentences counts subword tokens: it needs the model's tokenizer, found none")
    split = [[[split_sentences(paragraph) for paragraph in document] for document in example.documents]
             for example in examples]
    # one batch for every sentence of every example: the tokenizer's batch encoding pays its fixed cost once
    flat = [sentence for example in split for document in example for paragraph in document for sentence in paragraph]
    lengths = iter([len(ids) for ids in tokenizer.encode_batch(flat)])
    regrouped = []
    for example, documents in zip(examples, split, strict=True):
        new_documents = []
        for document in documents:
            paragraphs = [text for sentences in document
                          for text in group_sentences(*_units(sentences, [next(lengths) for _ in sentences],
                                                              tokenizer, budget), budget)]
            new_documents.append(paragraphs)  # kept even if empty: provenance indexes the documents
        regrouped.append(replace(example, documents=new_documents))
    return regrouped
