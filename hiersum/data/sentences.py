"""The one sentence splitter of hiersum: NLTK's Punkt, read by every consumer of sentences.

* the paragraph rule ``sentences`` (:mod:`hiersum.data.paragraphs`) and the ``ptb`` text normalization
  (:mod:`hiersum.data.normalization`);
* the baselines' source sentences: lead-3, the oracle, LexRank (:mod:`hiersum.evaluation.baselines`);
* ROUGE-Lsum, whose texts are given one sentence a line (:func:`one_sentence_a_line`,
  :mod:`hiersum.evaluation.metrics`), as Hugging Face's ``run_summarization.py`` prepares them
  (``"\\n".join(nltk.sent_tokenize(text))``), line breaks kept (below).

The splitter is :class:`nltk.tokenize.punkt.PunktSentenceTokenizer` with its default parameters: it needs no
downloaded model (``nltk.sent_tokenize`` loads NLTK's English ``punkt_tab`` data, which is not installed and
cannot be fetched offline), and it splits lower-cased, PTB-tokenized text such as CNN/DailyMail's, where
splitters that look for capitals find one sentence an article. Without the English model Punkt knows no
abbreviation, so it ends a sentence after ``Mr.`` or ``u.s.`` as the English model would not; unlike a
regular expression on ``.``, ``!`` and ``?``, it keeps an initial with its name (``J. Smith``), keeps a number
with the lower-case word after it (``5. in``) and keeps a closing quote or bracket with the sentence it ends
(``"We won." Then``).

NLTK comes with rouge-score (its Porter stemmer), so the splitter adds no dependency. Splitters that look for
capitals (BlingFire, syntok) find almost no sentence in lower-cased text; pysbd splits it well but is much slower.
In PTB-tokenized text an initial such as ``l.l.`` ends a sentence, and a spaced quote after a sentence's period
goes with that sentence, even one that opens the next (``discrimination . "`` | ``we want ...``).

A line break always ends a sentence, as it did for the regular expression hiersum used before and as it does for
rouge-score, whose ROUGE-Lsum reads a sentence a line: a text that already gives its sentences a line each
(CNN/DailyMail's highlights, of which some do not end in punctuation) keeps them. Within a line Punkt decides, as
``nltk.sent_tokenize`` does on the one-line texts Hugging Face's example scores (its decoded predictions and labels).
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nltk.tokenize.punkt import PunktSentenceTokenizer

_LINE = re.compile(r"[^\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]+")
"""A line: what lies between the line boundaries of :meth:`str.splitlines`."""

SENTENCE_SPLITTER = "nltk.punkt"
"""What the reports record as their sentence splitter (``metrics.json``'s ``sentence_splitter``): NLTK's Punkt
with its default parameters, within each line."""


@cache
def _punkt() -> PunktSentenceTokenizer:
    # imported here: nltk's package imports scipy (1-2 s), which a command that splits no text never needs
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    return PunktSentenceTokenizer()


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of ``text``: each line split by Punkt (default parameters)."""
    return [(line.start() + start, line.start() + end) for line in _LINE.finditer(text)
            for start, end in _punkt().span_tokenize(line.group())]


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (:func:`sentence_spans`), whitespace inside each normalised to single spaces; none
    for blank text."""
    return [" ".join(text[start:end].split()) for start, end in sentence_spans(text) if text[start:end].strip()]


def one_sentence_a_line(text: str) -> str:
    """``text`` with one sentence a line (:func:`split_sentences` joined by line breaks): the form rouge-score's
    ROUGE-Lsum reads."""
    return "\n".join(split_sentences(text))
