"""The one sentence splitter of hiersum: NLTK's Punkt, read by every consumer of sentences.

* the paragraph rule ``sentences`` (:mod:`hiersum.data.paragraphs`) and the ``ptb`` text normalization
  (:mod:`hiersum.data.normalization`);
* the baselines' source sentences: lead-3, the oracle, LexRank (:mod:`hiersum.evaluation.baselines`);
* ROUGE-Lsum, whose texts are given one sentence a line (:func:`one_sentence_a_line`,
  :mod:`hiersum.evaluation.metrics`), as Hugging Face's ``run_summarization.py`` prepares them
  (``"\\n".join(nltk.sent_tokenize(text))``).

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
In PTB-tokenized text an initial such as ``l.l.`` ends a sentence, and a spaced closing quote (``" gim me
shelter . "``) goes to the next one.

A line break is whitespace, as in ``nltk.sent_tokenize``: a line without end punctuation joins the next one into
a sentence, and a hard-wrapped paragraph is split at its sentence ends, not at its lines.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nltk.tokenize.punkt import PunktSentenceTokenizer

SENTENCE_SPLITTER = "nltk.punkt"
"""What the reports record as their sentence splitter (``metrics.json``'s ``sentence_splitter``): NLTK's Punkt
with its default parameters."""


@cache
def _punkt() -> PunktSentenceTokenizer:
    # imported here: nltk's package imports scipy (1-2 s), which a command that splits no text never needs
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    return PunktSentenceTokenizer()


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of ``text`` (Punkt, default parameters)."""
    return list(_punkt().span_tokenize(text))


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (Punkt, default parameters), whitespace inside each (line breaks included)
    normalised to single spaces; none for blank text."""
    return [" ".join(text[start:end].split()) for start, end in sentence_spans(text) if text[start:end].strip()]


def one_sentence_a_line(text: str) -> str:
    """``text`` with one sentence a line (:func:`split_sentences` joined by line breaks): the form rouge-score's
    ROUGE-Lsum reads."""
    return "\n".join(split_sentences(text))
