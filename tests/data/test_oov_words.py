"""Out-of-vocabulary words by their text (``model.copy_oov``): encoding gives each distinct ``<unk>`` text of a source
its extended id V + k and a target ``<unk>`` of the same text that id; the texts survive the prepared cache, and
decoding writes them back where they were, spaced as the tokenizer's decoder spaces a word."""

from __future__ import annotations

import json

import pytest
import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers

from hiersum.config import DataConfig
from hiersum.data.extended_vocabulary import hidden_word_table, through_table
from hiersum.data.prepared import prepare_split, split_manifest
from hiersum.data.schema import Example
from hiersum.data.selection import EncodingConfig, encode_examples, encoding_config
from hiersum.data.tokenizer import SubwordTokenizer, train_tokenizer

TEXT = "Zoë met Øster, then Zoë left"
"""Two words with characters the tokenizers below lack (ë, Ø), the first one twice."""
ALPHABET = ["the cat met a dog, then the dog left. Zoe met Oster"] * 20


@pytest.fixture(scope="module")
def tokenizer() -> SubwordTokenizer:
    """A trained BPE tokenizer whose alphabet lacks ë and Ø (byte fallback off: each is ``<unk>``)."""
    return train_tokenizer(ALPHABET, vocab_size=80)


def encoded(tokenizer: SubwordTokenizer, reference: str = "Zoë left", **config):
    example = Example(id="a", title="", documents=[[TEXT]], references=[reference])
    return encode_examples([example], tokenizer, EncodingConfig(**config))[0]


def test_each_unk_text_of_the_source_is_one_extended_id_in_order_of_first_appearance(tokenizer):
    V, unk = tokenizer.vocab_size, tokenizer.unknown_id
    plain, extended = encoded(tokenizer), encoded(tokenizer, copy_oov=True)
    [source] = plain.paragraphs
    unknown = [position for position, token_id in enumerate(source) if token_id == unk]
    assert len(unknown) == 3 and plain.oov_words == []
    assert [extended.paragraphs[0][position] for position in unknown] == [V, V + 1, V]
    assert extended.oov_words == ["ë", "Ø"]
    others = [position for position in range(len(source)) if position not in unknown]
    assert [extended.paragraphs[0][p] for p in others] == [source[p] for p in others]  # the rest as without it
    assert unk in plain.target and V in extended.target and unk not in extended.target  # "Zoë left": V + 0


def test_a_target_unk_the_source_lacks_stays_unk(tokenizer):
    extended = encoded(tokenizer, reference="Åsa left", copy_oov=True)
    assert tokenizer.unknown_id in extended.target
    assert all(token_id < tokenizer.vocab_size for token_id in extended.target)


def test_an_unk_cut_off_the_source_gets_no_id_and_a_target_of_it_none(tokenizer):
    cut = encoded(tokenizer, reference="Øster left", max_paragraph_tokens=3, copy_oov=True)  # ▁Zo, ë, ▁met
    assert cut.oov_words == ["ë"]
    assert tokenizer.unknown_id in cut.target and tokenizer.vocab_size not in cut.target


def test_decoding_writes_each_extended_id_as_its_text(tokenizer):
    extended = encoded(tokenizer, copy_oov=True)
    assert tokenizer.decode(extended.paragraphs[0], extended.oov_words) == TEXT
    assert tokenizer.decode(extended.target, extended.oov_words) == "Zoë left"
    assert tokenizer.decode(encoded(tokenizer).paragraphs[0]) == "Zo met ster, then Zo left"  # the guard: no text


def _wordpiece() -> SubwordTokenizer:
    """A BERT-style WordPiece tokenizer: an unknown word is one ``[UNK]`` standing for the whole word."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "met", ",", "then", "left"]
    backend = Tokenizer(models.WordPiece({token: i for i, token in enumerate(tokens)}, unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.decoder = decoders.WordPiece()
    backend.add_special_tokens([AddedToken(token, special=True) for token in tokens[:4]])
    return SubwordTokenizer.detect(backend)


def _unigram() -> SubwordTokenizer:
    """A SentencePiece-style Unigram tokenizer (as :func:`hiersum.data.tokenizer.sentencepiece_tokenizer` makes)."""
    pieces = [("<unk>", 0.0), ("<pad>", 0.0), ("<s>", 0.0), ("</s>", 0.0), ("▁", -2.0), ("▁met", -1.0),
              ("▁then", -1.0), ("▁left", -1.0), ("▁Zo", -1.0), ("ster", -1.0), (",", -1.0)]
    backend = Tokenizer(models.Unigram(pieces, unk_id=0, byte_fallback=False))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    backend.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    backend.add_special_tokens([AddedToken(token, special=True) for token, _ in pieces[:4]])
    return SubwordTokenizer.detect(backend, pad="<pad>", bos="<s>", eos="</s>")


@pytest.mark.parametrize(("make", "words"), [(_wordpiece, ["Zoë", "Øster"]), (_unigram, ["ë", "Ø"])],
                         ids=["wordpiece", "unigram"])
def test_the_text_of_an_unk_is_spaced_as_the_tokenizers_decoder_spaces_a_word(make, words):
    """A WordPiece ``[UNK]`` stands for a whole word, which its decoder separates by a space; a Metaspace piece's
    unknown character joins the piece before it (``▁Zo`` + ``ë``) or follows a lone ``▁`` (`` Ø``)."""
    tokenizer = make()
    extended = encoded(tokenizer, copy_oov=True)
    assert extended.oov_words == words
    assert tokenizer.decode(extended.paragraphs[0], extended.oov_words) == TEXT


def test_the_texts_survive_the_prepared_cache_whose_key_names_the_option_only_when_on(tokenizer, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    record = {"id": "a", "documents": [TEXT], "summary": "Zoë left"}
    for split in ("train", "validation"):
        (corpus / f"{split}.jsonl").write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    config = DataConfig(path=str(corpus), cache_dir=str(tmp_path / "cache"))
    off = split_manifest(config, "validation", tokenizer)
    assert "copy_oov" not in off["selection"]  # the key of a split prepared before the option: unchanged
    assert split_manifest(config, "validation", tokenizer, copy_oov=True)["selection"]["copy_oov"] is True
    for split in ("train", "validation"):
        prepared = prepare_split(config, split, tokenizer, copy_oov=True)
        assert prepared[0].oov_words == ["ë", "Ø"] and tokenizer.vocab_size in prepared[0].target
        example = Example(id="a", title="", documents=[[TEXT]], references=["Zoë left"])
        selection = encoding_config(config, copy_oov=True, evaluation=split != "train")
        assert prepared[0] == encode_examples([example], tokenizer, selection)[0]
    assert prepare_split(config, "validation", tokenizer)[0].oov_words == []


def test_hidden_words_are_numbered_after_the_extended_ids_a_source_holds():
    """The training exposure (``optim.copy_oov_share``) over a source with ``<unk>`` words encoded by their text: an
    extended id stays, and each hidden word takes the next id."""
    V = 10
    src = torch.tensor([[[5, V, 6, V + 1]], [[5, 6, 7, 0]]])  # (B=2, P=1, T=4): example 0 holds V and V + 1
    mask = torch.tensor([[[True] * 4], [[True, True, True, False]]])
    tgt = torch.tensor([[V, 5], [5, 6]])
    table = hidden_word_table(src, mask, tgt, torch.ones_like(tgt, dtype=torch.bool), share=1.0, vocab_size=V,
                              kept_ids=(0,))
    assert through_table(table, src).tolist() == [[[V + 2, V, 6, V + 1]], [[V, V + 1, 7, 0]]]
    assert through_table(table, tgt).tolist() == [[V, V + 2], [V, V + 1]]
