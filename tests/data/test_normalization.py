"""``data.text_normalization``: raw text PTB-tokenized as CNN/DailyMail's release is, idempotent on the release, and
summaries detokenized for reading (:mod:`hiersum.data.normalization`)."""

from __future__ import annotations

import difflib

import pytest

from hiersum.config import TextNormalization
from hiersum.data.normalization import normalize_examples, normalize_text, readable
from hiersum.data.schema import Example
from tests.helpers.paths import SHARED_DIR

CNNDM = SHARED_DIR / "data" / "cnn-dailymail"

RAW_AND_PTB = [
    ("The 35-year-old suspect didn't survive, police said.",
     "The 35 - year - old suspect did n't survive , police said ."),
    ('He said "I don\'t know" (twice).', 'He said " I do n\'t know " ( twice ) .'),
    ("It cost £100-a-week at the pre-season camp.", "It cost £ 100 - a-week at the pre-season camp ."),
    ("The U.S. Treasury's anti-doping e-mail arrived.", "The U.S. Treasury 's anti-doping e-mail arrived ."),
    ("Mr. Smith arrived at 10 a.m. Friday. He left.", "Mr. Smith arrived at 10 a.m. Friday . He left ."),
    ("It’s his “real” work… ok", "It ’s his “ real ” work … ok"),
    ("NRA became a 'foreign asset' to Russia's efforts.", "NRA became a ' foreign asset ' to Russia 's efforts ."),
    ("Call 212-867-5309; it won 2-1.", "Call 212-867-5309 ; it won 2 - 1 ."),
    ("first line.\nsecond line", "first line .\nsecond line"),
]
"""Raw text and its PTB form as the release writes it (``( cnn )``, ``n't``, ``35 - year - old``, ``"``, ``£ 100``,
CoreNLP's prefixes kept joined, curly apostrophes split as straight ones, the lines kept)."""


@pytest.mark.parametrize(("raw", "ptb"), RAW_AND_PTB)
def test_raw_text_is_tokenized_as_the_release_is(raw, ptb):
    assert normalize_text(raw, "ptb") == ptb


@pytest.mark.parametrize(("raw", "ptb"), RAW_AND_PTB)
def test_the_tokenization_is_idempotent(raw, ptb):
    assert normalize_text(ptb, "ptb") == ptb
    assert normalize_text(ptb.lower(), TextNormalization.ptb) == ptb.lower()


@pytest.mark.parametrize(
    ("ptb", "readable_text"),
    [
        ("the 35 - year - old suspect did n't survive , police said .",
         "the 35-year-old suspect didn't survive, police said."),
        ('he said " i do n\'t know " ( twice ) .', 'he said "i don\'t know" (twice).'),
        ("it cost £ 100 - a-week .", "it cost £100-a-week."),
        ("nra became a ' foreign asset ' to russia 's efforts .", "nra became a 'foreign asset' to russia's efforts."),
        ("prices -lrb- in dollars -rrb- rose .", "prices (in dollars) rose."),
        ("first line .\nsecond line", "first line.\nsecond line"),
    ],
)
def test_a_summary_is_detokenized_for_reading_and_tokenizes_back(ptb, readable_text):
    assert readable(ptb, "ptb") == readable_text
    assert normalize_text(readable_text, "ptb") == ptb.replace("-lrb-", "(").replace("-rrb-", ")")


def test_none_changes_nothing():
    text = "The 35-year-old didn't \"say\" (it)."
    example = Example(id="a", documents=[[text]], references=[text], title=text)
    assert normalize_text(text, "none") == readable(text, "none") == text
    assert normalize_examples([example], "none") == [example]


def test_an_example_is_normalized_but_its_references_are_kept_for_scoring():
    raw = "The 35-year-old didn't."
    example = Example(id="a", documents=[[raw, "A (b)."]], references=[raw], title="Who's there?")
    (normalized,) = normalize_examples([example], "ptb")
    assert normalized.documents == [["The 35 - year - old did n't .", "A ( b ) ."]]
    assert normalized.title == "Who 's there ?"
    assert normalized.references == [raw]


def test_an_unknown_normalization_is_refused_naming_the_field():
    with pytest.raises(ValueError, match=r"data.text_normalization must be one of 'none', 'ptb', found 'moses'"):
        normalize_text("a", "moses")


def changed_fraction(before: str, after: str) -> float:
    """The fraction of ``before``'s tokens that a word-level diff finds changed in ``after``."""
    a, b = before.split(), after.split()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    changed = sum(max(i2 - i1, j2 - j1) for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal")
    return changed / len(a)


@pytest.mark.skipif(not CNNDM.is_dir(), reason="shared CNN/DailyMail data not present")
def test_the_released_corpus_is_left_almost_unchanged():
    """On the release's first 20 validation articles and their highlights (measured on 200: 0.17% of tokens
    changed, mostly ``****`` and ``at&t``, which NLTK splits), at most 0.5% of the tokens change, and the
    highlights, a sentence a line, keep their lines."""
    import pandas as pd

    rows = pd.read_parquet(CNNDM / "validation.parquet").head(20)
    texts = [*rows.article, *rows.highlights]
    normalized = [normalize_text(text, "ptb") for text in texts]
    assert changed_fraction(" ".join(texts), " ".join(normalized)) < 0.005
    assert sum(a == b for a, b in zip(texts, normalized, strict=True)) >= 30
    assert [text.count("\n") for text in rows.highlights] == [text.count("\n") for text in normalized[20:]]


def test_the_prepared_key_names_the_normalization_only_when_it_normalizes(tmp_path):
    """The corpora prepared before the option existed keep their keys (``none`` adds nothing to them)."""
    from hiersum.config import DataConfig
    from hiersum.data.prepared import split_manifest
    from hiersum.data.tokenizer import train_tokenizer

    (tmp_path / "train.jsonl").write_text('{"documents": ["a b."], "summary": "a."}\n')
    tokenizer = train_tokenizer(["alpha beta gamma delta."] * 4, vocab_size=40)
    plain = split_manifest(DataConfig(path=str(tmp_path)), "train", tokenizer)
    ptb = split_manifest(DataConfig(path=str(tmp_path), text_normalization="ptb"), "train", tokenizer)
    assert "text_normalization" not in plain["selection"]
    assert ptb["selection"] == {**plain["selection"], "text_normalization": "ptb"}


def test_a_corpus_released_so_normalized_is_read_as_released(tmp_path):
    """CNN/DailyMail's release is PTB-tokenized: under ``ptb`` its prepared splits and tokenizer keep the keys (and the
    text) of ``none``, while a raw corpus under ``ptb`` is normalized."""
    from hiersum.config import DataConfig
    from hiersum.data.formats.registry import corpus_normalization
    from hiersum.data.prepared import split_manifest
    from hiersum.data.tokenizer import train_tokenizer

    (tmp_path / "train.jsonl").write_text('{"id": "1", "article": "a b .", "highlights": "a ."}\n')
    tokenizer = train_tokenizer(["alpha beta gamma delta."] * 4, vocab_size=40)
    cnndm = {"path": str(tmp_path), "format": "cnndm"}
    assert corpus_normalization(DataConfig(**cnndm, text_normalization="ptb")) is TextNormalization.none
    assert corpus_normalization(DataConfig(path=str(tmp_path), text_normalization="ptb")) is TextNormalization.ptb
    assert (split_manifest(DataConfig(**cnndm, text_normalization="ptb"), "train", tokenizer)
            == split_manifest(DataConfig(**cnndm), "train", tokenizer))
