"""Text normalization (``data.text_normalization``): raw text made to look like the text a model was trained on,
before the paragraph rule and the subword tokenizer read it, and its summaries made readable again.

``none``
    The text as given (every corpus but CNN/DailyMail; a checkpoint of an earlier version, which records no
    normalization).
``ptb``
    Penn-Treebank-style word tokens joined by single spaces, as CNN/DailyMail's tokenized release has them
    (``../shared/data/cnn-dailymail``: ``( cnn )``, ``did n't``, ``bpa 's``, ``" gim me shelter , "``). Each line is
    split into sentences by hiersum's one splitter (Punkt, :func:`hiersum.data.sentences.sentence_spans`),
    each sentence into words by NLTK's :class:`~nltk.tokenize.NLTKWordTokenizer` (the Treebank tokenizer's
    successor, what ``nltk.word_tokenize`` runs), then three conventions of the release, which Stanford CoreNLP
    tokenized, are kept: a double quote is ``"`` (not the Treebank's ``````/``''``); brackets stay ``(`` and ``)``
    (the release has no ``-lrb-``); a curly apostrophe is split as a straight one is and kept (``it ’s``,
    ``n’t``); ``£``, ``€``, ``¥``, ``…`` and the en and em dashes are tokens of their own; and a hyphen between
    letters or digits is split (``35 - year - old``) unless the word before it is one of CoreNLP's prefixes
    (:data:`HYPHEN_PREFIXES`: ``anti-doping``, ``e-mail``, ``a-week``) or the word is a number such as a phone
    number (``212-867-5309``). Case is left alone: lower-casing is the tokenizer's (``tokenizer.lowercase``).
    Line breaks are kept (a CNN/DailyMail reference has a sentence a line).

    The tokenization is idempotent on the release, or nearly (docs/data.md gives the measured fraction of tokens
    it changes), so it is applied to every text of a run: ``hiersum prepare`` (and so training: the paragraphs,
    the title and the training target; the tokenizer is trained on the normalized text), evaluation's inputs,
    ``hiersum summarize``, ``hiersum serve`` and the Python call. A model fine-tuned on raw text from a
    CNN/DailyMail checkpoint thus reads text as its base model did. The references an evaluation scores against
    are never changed. A summary a model writes in this form is detokenized for reading by :func:`readable`
    (NLTK's :class:`~nltk.tokenize.treebank.TreebankWordDetokenizer`, quotes paired, hyphens and currency joined
    again, ``-lrb-`` and its kind turned back into brackets).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING

from hiersum.config.choices import TextNormalization
from hiersum.data.schema import Example
from hiersum.data.sentences import sentence_spans

if TYPE_CHECKING:
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.tokenize.treebank import TreebankWordDetokenizer

HYPHEN_PREFIXES = frozenset(
    "e a u x agro ante anti arch be bi bio co counter cross cyber de eco ex extra inter intra macro mega micro mid "
    "mini multi neo non over pan para peri post pre pro pseudo quasi re semi sub super tri ultra un uni vice".split()
)
"""The words a hyphen stays after (``anti-doping``, ``co-pilot``, ``e-mail``, ``a-week``): the prefixes of Stanford
CoreNLP's PTB tokenizer, which tokenized CNN/DailyMail's release (its joined hyphenated words start with these)."""
HYPHEN_SUFFIXES = frozenset("esque ette fest fold gate itis less most rama wise".split())
"""The words a hyphen stays before (``second-most``, ``money-wise``): CoreNLP's suffixes."""

QUOTES = ("``", "''")
"""The Treebank's opening and closing double quotes; the release writes both as ``"``."""
BRACKET_TOKENS = {"-lrb-": "(", "-rrb-": ")", "-lsb-": "[", "-rsb-": "]", "-lcb-": "{", "-rcb-": "}"}
"""The PTB's bracket tokens (other releases of CNN/DailyMail have them), turned back into brackets for reading."""

_APOSTROPHES = str.maketrans("’", "'")
_READABLE_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'})
"""Curly quotes as the straight ones the detokenizer knows."""
"""A curly apostrophe read as a straight one by the word tokenizer (one character for one: offsets stay)."""
_SPLIT_OFF = re.compile(r"([£€¥…–—])")
"""Characters that are tokens of their own in the release but not in NLTK's rules."""
_HYPHENATED = re.compile(r"[^\W_]+(?:-[^\W_]+)+")
_NUMBER = re.compile(r"\d+(?:-\d+){2,}")
"""A phone number or a date (``212-867-5309``, ``2-14-08``): kept whole, as the release keeps it."""
_ABBREVIATION = re.compile(r"(?i)(?:[^\W\d_]\.)+[^\W\d_]|mr|mrs|ms|dr|st|gov|sen|rep|gen|lt|col|sgt|capt|maj|prof|jr|sr"
                           r"|rev|no|vs|etc|inc|corp|ltd|jan|feb|aug|sept|oct|nov|dec")
"""What a sentence that Punkt ends with a period may end with but for which the period is no sentence end: an
initialism (``u.s``, ``a.m``, ``l.l``) or a common abbreviation (``mr``, ``gov``, ``no``, ``inc``, ``sept``;
the release keeps ``mr.`` whole)."""
_JOINED_HYPHEN = re.compile(r"(?<=[^\W_]) - (?=[^\W_])")
_JOINED_CURRENCY = re.compile(r"(?<=[£€¥$]) (?=\d)")


@cache
def _word_tokenizer() -> NLTKWordTokenizer:
    # imported here: nltk's package imports scipy (1-2 s), which a run that normalizes nothing never needs
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


@cache
def _detokenizer() -> TreebankWordDetokenizer:
    from nltk.tokenize.treebank import TreebankWordDetokenizer

    return TreebankWordDetokenizer()


def _split_token(token: str) -> list[str]:
    """``token`` split by the release's conventions that NLTK lacks (currency, ellipsis, dashes, hyphens)."""
    tokens: list[str] = []
    for part in _SPLIT_OFF.split(token):
        if not _HYPHENATED.fullmatch(part) or _NUMBER.fullmatch(part):
            tokens += [part] if part else []
            continue
        words = part.split("-")
        if words[0].lower() in HYPHEN_PREFIXES:  # kept whole: anti-doping, over-the-top
            tokens.append(part)
            continue
        tokens.append(words[0])
        for before, word in zip(words, words[1:], strict=False):
            if before.lower() in HYPHEN_PREFIXES or word.lower() in HYPHEN_SUFFIXES:  # 100 - a-week, second-most
                tokens[-1] += "-" + word
            else:
                tokens += ["-", word]
    return tokens


def ptb_tokens(line: str) -> list[str]:
    """The words of one line of text, PTB-tokenized as CNN/DailyMail's release is (see the module docstring)."""
    straight = line.translate(_APOSTROPHES)
    tokens: list[str] = []
    for start, end in sentence_spans(straight):
        cursor = start
        for token in _word_tokenizer().tokenize(straight[start:end]):
            if token in QUOTES:
                tokens.append('"')
                continue
            found = straight.find(token, cursor, end)
            if found >= 0:  # the characters of the text (a curly apostrophe back), where NLTK's token is its text
                token, cursor = line[found:found + len(token)], found + len(token)
            tokens += _split_token(token)
        if len(tokens) > 1 and tokens[-1] == "." and _ABBREVIATION.fullmatch(tokens[-2]):
            tokens[-2:] = [tokens[-2] + "."]  # Punkt ended a sentence after u.s. or mr.: NLTK split its period off
    return tokens


def normalize_text(text: str, normalization: TextNormalization | str) -> str:
    """``text`` normalized by ``normalization`` (``ptb``: each line's tokens joined by single spaces, the lines
    kept; ``none``: unchanged)."""
    if TextNormalization.coerce(normalization, "data.text_normalization") is TextNormalization.none:
        return text
    return "\n".join(" ".join(ptb_tokens(line)) for line in text.split("\n"))


def normalize_examples(examples: Sequence[Example], normalization: TextNormalization | str) -> list[Example]:
    """``examples`` with their title and paragraphs normalized (:func:`normalize_text`); the references are kept
    as given (what evaluation scores against)."""
    if TextNormalization.coerce(normalization, "data.text_normalization") is TextNormalization.none:
        return list(examples)
    return [replace(example, title=example.title and normalize_text(example.title, normalization),
                    documents=[[normalize_text(paragraph, normalization) for paragraph in document]
                               for document in example.documents])
            for example in examples]


def readable(text: str, normalization: TextNormalization | str) -> str:
    """A text a model of ``normalization`` wrote, for reading: under ``ptb`` detokenized (NLTK's Treebank
    detokenizer; ``"`` paired as opening and closing quotes; ``35 - year - old`` -> ``35-year-old``; ``£ 5`` ->
    ``£5``; ``-lrb-`` -> ``(``); under ``none`` unchanged."""
    if TextNormalization.coerce(normalization, "data.text_normalization") is TextNormalization.none:
        return text
    lines = []
    for line in text.split("\n"):
        tokens, opening = [], True
        for token in line.translate(_READABLE_QUOTES).split():
            if token == '"':
                token, opening = QUOTES[0] if opening else QUOTES[1], not opening
            tokens.append(BRACKET_TOKENS.get(token.lower(), token))
        detokenized = _detokenizer().detokenize(_single_quotes_paired(tokens))
        lines.append(_JOINED_CURRENCY.sub("", _JOINED_HYPHEN.sub("-", detokenized)))
    return "\n".join(lines)


def _single_quotes_paired(tokens: list[str]) -> list[str]:
    """``tokens`` with each opening single quote joined to the word after it (``' foreign asset '`` ->
    ``'foreign asset '``; the detokenizer joins the closing one), when the quote tokens pair up (an even number);
    otherwise (a possessive ``onassis '``) as they are."""
    quotes = [index for index, token in enumerate(tokens) if token == "'"]
    if not quotes or len(quotes) % 2 or quotes[-1] == len(tokens) - 1:
        return tokens
    opening = set(quotes[::2])
    paired: list[str] = []
    for index, token in enumerate(tokens):
        if index - 1 in opening:
            paired[-1] += token
        else:
            paired.append(token)
    return paired
