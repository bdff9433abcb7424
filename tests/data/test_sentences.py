"""hiersum's one sentence splitter (:mod:`hiersum.data.sentences`, NLTK's Punkt), and that every consumer of
sentences reads it: the paragraph rule, lead-3, the oracle, LexRank and ROUGE-Lsum."""

from __future__ import annotations

import re
from pathlib import Path

from rouge_score import rouge_scorer

from hiersum.data import paragraphs
from hiersum.data.schema import Example
from hiersum.data.sentences import SENTENCE_SPLITTER, one_sentence_a_line, sentence_spans, split_sentences
from hiersum.data.tokenizer import train_tokenizer
from hiersum.evaluation.baselines import lead3, lexrank_order, oracle, source_sentences
from hiersum.evaluation.metrics import rouge_reference_scores

TRICKY = ('J. Smith went to Washington. He arrived at 5. in the morning. She said "We won." Then it rained.\n'
          "a line without an end\nand the next one.")
"""Where a regular expression on ``.``, ``!`` and ``?`` (hiersum's earlier ROUGE-Lsum and lead-3 splitter) splits
wrongly: an initial, a number before a lower-case word, a closing quote; a line break ends a sentence for both."""
TRICKY_SENTENCES = ["J. Smith went to Washington.", "He arrived at 5. in the morning.", 'She said "We won."',
                    "Then it rained.", "a line without an end", "and the next one."]
REGEX_SENTENCES = ["J.", "Smith went to Washington.", "He arrived at 5.", "in the morning.",
                   'She said "We won." Then it rained.', "a line without an end", "and the next one."]
"""What that regular expression gave for ``TRICKY``."""
PACKAGE = Path(__file__).resolve().parents[2] / "hiersum"


def test_punkt_keeps_initials_numbers_and_quotes_with_their_sentence_and_a_line_break_ends_one() -> None:
    assert split_sentences(TRICKY) == TRICKY_SENTENCES
    assert SENTENCE_SPLITTER == "nltk.punkt"


def test_sentences_are_whitespace_normalised_and_blank_text_has_none() -> None:
    assert split_sentences("  One   here.\tTwo  there!  ") == ["One here.", "Two there!"]
    assert split_sentences("no end\r\nhere\n\n next. one") == ["no end", "here", "next.", "one"]
    assert split_sentences("") == split_sentences(" \n ") == []
    assert one_sentence_a_line("One here. Two there!") == "One here.\nTwo there!"
    assert one_sentence_a_line("") == ""


def test_spans_index_the_text() -> None:
    text = "First one.  Second one!"
    assert [text[start:end] for start, end in sentence_spans(text)] == ["First one.", "Second one!"]


def test_paragraph_rule_baselines_and_rouge_lsum_read_the_one_splitter(monkeypatch) -> None:
    reference = "Smith arrived at 5. in the morning."
    example = Example(id="x", title="", documents=[[TRICKY]], references=[reference])
    # the paragraph rule: the sentences it groups into paragraphs (a budget no sentence exceeds: none is split)
    tokenizer = train_tokenizer([TRICKY] * 4, vocab_size=120)
    grouped = []
    group = paragraphs.group_sentences
    monkeypatch.setattr(paragraphs, "group_sentences",
                        lambda units, lengths, budget: grouped.extend(units) or group(units, lengths, budget))
    (by_sentence,) = paragraphs.apply_paragraph_rule([example], tokenizer, "sentences", 1000)
    assert grouped == TRICKY_SENTENCES and by_sentence.documents == [[" ".join(TRICKY_SENTENCES)]]
    # lead-3, the oracle and LexRank take the same sentences
    assert source_sentences(example) == TRICKY_SENTENCES
    assert lead3(example).splitlines() == TRICKY_SENTENCES[:3]
    assert oracle(example) == TRICKY_SENTENCES[1]  # a regular expression would offer "in the morning." alone
    assert sorted(lexrank_order(source_sentences(example))) == list(range(len(TRICKY_SENTENCES)))
    # ROUGE-Lsum: rouge-score reads the splitter's sentences, one a line (a prediction in another order tells)
    prediction = "In the morning he arrived at 5."
    scorer = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True)
    ours = rouge_reference_scores([prediction], [[TRICKY]])[0][0]["rougeLsum"]
    assert ours == scorer.score("\n".join(TRICKY_SENTENCES), prediction)["rougeLsum"]
    assert ours.recall < scorer.score("\n".join(REGEX_SENTENCES), prediction)["rougeLsum"].recall


def test_no_second_sentence_splitter_in_the_package() -> None:
    """Only :mod:`hiersum.data.sentences` builds a sentence splitter: no other Punkt, ``sent_tokenize`` or regular
    expression on sentence-ending punctuation in the package."""
    splitter = re.compile(r"PunktSentenceTokenizer|sent_tokenize|\[\.!\?\]|\[!\.\?\]|\[\?!\.\]")
    found = [f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}"
             for path in sorted(PACKAGE.rglob("*.py")) if path.name != "sentences.py"
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
             if splitter.search(line)]
    assert found == [], "a second sentence splitter:\n" + "\n".join(found)
