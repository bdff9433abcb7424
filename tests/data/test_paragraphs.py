"""The paragraph rule (``data.paragraphs``): sentences grouped into paragraphs of at most T tokens, applied on every
path from text to ids (prepare, and the summarize / serve / Python paths through a checkpoint)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from hiersum.config import DataConfig, SelectionOverrides
from hiersum.data import paragraphs as paragraphs_module
from hiersum.data.paragraphs import apply_paragraph_rule, group_sentences, paragraph_rule_key, split_to_budget
from hiersum.data.schema import Example
from hiersum.data.selection import encode_examples, encoding_config
from hiersum.data.sentences import split_sentences
from hiersum.data.tokenizer import SubwordTokenizer, train_tokenizer
from hiersum.inference import load_summarizer

# CNN/DailyMail's form: lower-cased, PTB-tokenized, one line without paragraph breaks
ARTICLE = ("new delhi ( cnn ) thousands stormed a jail and dragged out a suspect , authorities said friday . "
           "the 35 - year - old suspect died from severe injuries before officers could rescue him . "
           "police initially used teargas to rescue the man , but it did n't work , he said . "
           "dimapur town has been placed under a curfew . "
           "the woman in the documentary incident was attacked by five men on a public bus in 2012 .")


def n_tokens(tokenizer: SubwordTokenizer, text: str) -> int:
    return len(tokenizer.encode_batch([text])[0])


@pytest.fixture(scope="module")
def tokenizer() -> SubwordTokenizer:
    return train_tokenizer([ARTICLE] * 4, vocab_size=200)


def test_lower_cased_ptb_text_splits_into_its_sentences() -> None:
    sentences = split_sentences(ARTICLE)
    assert len(sentences) == 5
    assert sentences[0].endswith("authorities said friday .")
    assert sentences[3] == "dimapur town has been placed under a curfew ."
    assert " ".join(sentences) == " ".join(ARTICLE.split())


def test_sentences_are_grouped_in_order_up_to_the_budget() -> None:
    sentences = ["a", "b", "c", "d", "e"]
    assert group_sentences(sentences, [3, 3, 3, 9, 1], budget=6) == ["a b", "c", "d", "e"]
    assert group_sentences(sentences, [1] * 5, budget=100) == ["a b c d e"]
    assert group_sentences(sentences, [7] * 5, budget=6) == sentences  # a long sentence is a paragraph alone
    assert group_sentences([], [], budget=6) == []


def test_given_keeps_the_readers_paragraphs(tokenizer: SubwordTokenizer) -> None:
    example = Example(id="x", title="", documents=[[ARTICLE]], references=["r"])
    assert apply_paragraph_rule([example], tokenizer, "given", 8) == [example]


def test_sentences_fill_paragraphs_of_at_most_the_budget_and_lose_no_text(tokenizer: SubwordTokenizer) -> None:
    example = Example(id="x", title="the title", documents=[[ARTICLE, "a second given paragraph ."], [ARTICLE]],
                      references=["r"])
    budget = 40
    (result,) = apply_paragraph_rule([example], tokenizer, "sentences", budget)
    assert (result.id, result.title, result.references) == ("x", "the title", ["r"])
    assert len(result.documents) == 2
    first = result.documents[0]
    assert len(first) > 2
    for paragraph in first:  # within the budget unless the paragraph is a single long sentence
        assert n_tokens(tokenizer, paragraph) <= budget or len(split_sentences(paragraph)) == 1
    # never joined across given paragraphs: the second given paragraph stays a paragraph of its own
    assert first[-1] == "a second given paragraph ."
    assert " ".join(first[:-1]) == " ".join(ARTICLE.split())
    # greedy: no two neighbouring paragraphs of one given paragraph would fit the budget together
    for left, right in zip(first[:-2], first[1:-1], strict=True):
        assert n_tokens(tokenizer, left) + n_tokens(tokenizer, split_sentences(right)[0]) > budget


def test_encoding_under_sentences_gives_paragraphs_that_are_not_cut(tokenizer: SubwordTokenizer) -> None:
    example = Example(id="x", title="", documents=[[ARTICLE]], references=["summary"])
    data = DataConfig(path="", max_paragraphs=10, max_paragraph_tokens=40, title_paragraph=False)
    (given,) = encode_examples([example], tokenizer, encoding_config(data))
    assert len(given.paragraphs) == 1 and len(given.paragraphs[0]) == 40  # one paragraph, cut to T
    data.paragraphs = "sentences"
    (encoded,) = encode_examples([example], tokenizer, encoding_config(data))
    assert len(encoded.paragraphs) > 1
    assert encoded.provenance == [(0, p) for p in range(len(encoded.paragraphs))]
    article_tokens = n_tokens(tokenizer, ARTICLE)
    assert sum(map(len, encoded.paragraphs)) >= article_tokens - 2  # nothing cut (subwords may merge at a join)
    assert all(len(paragraph) <= 40 for paragraph in encoded.paragraphs)


def test_a_checkpoint_trained_on_sentences_splits_text_so_in_the_python_call(checkpoint: Path, tmp_path: Path) -> None:
    saved = torch.load(checkpoint, weights_only=True, map_location="cpu")
    saved["hyper_parameters"]["data"]["paragraphs"] = "sentences"
    saved["hyper_parameters"]["data"]["max_paragraph_tokens"] = 24
    sentences_checkpoint = tmp_path / "sentences.ckpt"
    torch.save(saved, sentences_checkpoint)
    text = ARTICLE  # one paragraph: under ``given`` the model would see one row
    (plain,) = load_summarizer(checkpoint).summarize([text], min_length=1, max_length=4)
    (line,) = load_summarizer(sentences_checkpoint).summarize([text], min_length=1, max_length=4, attention_top_k=2)
    assert plain["n_paragraphs_kept"] == 1
    assert line["n_paragraphs_kept"] > 2
    for paragraph in line["paragraphs"]:  # the attended paragraphs are the rule's, with their text
        assert paragraph["text"] in " ".join(ARTICLE.split())
        assert paragraph["text"] != " ".join(ARTICLE.split())
    json.dumps(line)


def single_token_words(tokenizer: SubwordTokenizer) -> list[str]:
    """The words of ``ARTICLE`` that are one token each (so a text of N of them is N tokens)."""
    words = sorted(set(ARTICLE.split()))
    return [word for word, ids in zip(words, tokenizer.encode_batch(words), strict=True) if len(ids) == 1]


def test_a_sentence_over_the_budget_is_split_into_pieces_of_the_budget_that_lose_no_token(
        tokenizer: SubwordTokenizer) -> None:
    words = single_token_words(tokenizer)
    assert len(words) >= 10
    sentence = " ".join(words[index % len(words)] for index in range(150))  # one sentence: no full stop
    (tokens,) = tokenizer.encode_batch([sentence])
    assert len(tokens) == 150
    example = Example(id="x", title="", documents=[[sentence]], references=["r"])
    (result,) = apply_paragraph_rule([example], tokenizer, "sentences", 64)
    (paragraphs,) = result.documents
    pieces = tokenizer.encode_batch(paragraphs)
    assert [len(piece) for piece in pieces] == [64, 64, 22]
    assert [token for piece in pieces for token in piece] == tokens  # no token lost, none changed
    assert " ".join(paragraphs) == sentence
    # and encoding keeps them whole: the grid's rows hold every token of the sentence
    data = DataConfig(path="", max_paragraphs=10, max_paragraph_tokens=64, title_paragraph=False,
                      paragraphs="sentences")
    (encoded,) = encode_examples([example], tokenizer, encoding_config(data))
    assert [token for row in encoded.paragraphs for token in row] == tokens


def test_the_pieces_of_a_long_sentence_join_the_sentences_around_it(tokenizer: SubwordTokenizer) -> None:
    words = single_token_words(tokenizer)
    long = " ".join(words[index % len(words)] for index in range(20))
    text = f"{long} . dimapur town has been placed under a curfew ."
    (result,) = apply_paragraph_rule([Example(id="x", title="", documents=[[text]], references=[])], tokenizer,
                                     "sentences", 8)
    lengths = [len(ids) for ids in tokenizer.encode_batch(result.documents[0])]
    assert max(lengths) <= 8 and sum(lengths) >= n_tokens(tokenizer, text) - 1  # the full stop may merge
    assert " ".join(result.documents[0]) == text


def test_a_word_longer_than_the_budget_is_cut_at_token_boundaries(tokenizer: SubwordTokenizer) -> None:
    word = "qzxv" * 12  # letters the tokenizer has seen one by one only: many tokens, no word start inside
    assert n_tokens(tokenizer, word) > 8
    pieces = split_to_budget(word, tokenizer, 8)
    assert len(pieces) > 1 and "".join(text for text, _ in pieces) == word
    assert all(length == n_tokens(tokenizer, text) <= 8 for text, length in pieces)
    assert split_to_budget("dimapur town", tokenizer, 8) == [("dimapur town", n_tokens(tokenizer, "dimapur town"))]


def test_the_rule_sentences_without_a_tokenizer_says_what_it_needs() -> None:
    example = Example(id="x", title="", documents=[[ARTICLE]], references=[])
    assert apply_paragraph_rule([example], None, "given", 8) == [example]
    with pytest.raises(ValueError, match="data.paragraphs=sentences .* needs the model's tokenizer, found none"):
        apply_paragraph_rule([example], None, "sentences", 8)


def test_the_rule_key_is_empty_under_given_and_names_the_rule_and_budget_under_sentences() -> None:
    assert paragraph_rule_key(DataConfig(path="")) == {}  # the labels cached before the rule was keyed stay valid
    assert paragraph_rule_key(DataConfig(path="", text_normalization="ptb")) == {"text_normalization": "ptb"}
    assert paragraph_rule_key(DataConfig(path="", paragraphs="sentences", max_paragraph_tokens=64)) == {
        "paragraphs": "sentences", "max_paragraph_tokens": 64, "long_sentences": "split"}


def test_the_summarizer_quotes_the_paragraphs_it_encoded_made_once_per_record(
        checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    saved = torch.load(checkpoint, weights_only=True, map_location="cpu")
    saved["hyper_parameters"]["data"]["paragraphs"] = "sentences"
    saved["hyper_parameters"]["data"]["max_paragraph_tokens"] = 24
    sentences_checkpoint = tmp_path / "sentences.ckpt"
    torch.save(saved, sentences_checkpoint)
    summarizer = load_summarizer(sentences_checkpoint)
    texts = [ARTICLE, "dimapur town has been placed under a curfew . " + ARTICLE]
    calls: list[int] = []

    def counted(examples, *args, **kwargs):
        calls.append(len(examples))
        return apply_paragraph_rule(examples, *args, **kwargs)

    monkeypatch.setattr(paragraphs_module, "apply_paragraph_rule", counted)
    lines = summarizer.summarize(texts, min_length=1, max_length=4, attention_top_k=3)
    assert sum(calls) == len(texts)  # the rule ran once per record, for encoding and the quoted paragraphs alike
    monkeypatch.undo()
    selection = summarizer.selection(SelectionOverrides())
    encoded = encode_examples([Example(id=str(i), title="", documents=[[t]], references=[]) for i, t in
                               enumerate(texts)], summarizer.tokenizer, selection)
    for line, example in zip(lines, encoded, strict=True):
        assert line["paragraphs"]
        for quoted in line["paragraphs"]:  # the quoted text is the row the model read
            row = example.paragraphs[example.provenance.index((quoted["document"], quoted["paragraph"]))]
            (ids,) = summarizer.tokenizer.encode_batch([quoted["text"]])
            assert ids[: selection.max_paragraph_tokens] == row
