"""Subword tokenizers: trained ones, and the official SentencePiece model of hiersumm (in ../shared)."""

import itertools
import json

import pytest
from transformers import AutoTokenizer

from hiersum.config import TokenizerConfig
from hiersum.data.tokenizer import BYTE_PIECES, load_tokenizer, train_tokenizer
from tests.helpers.paths import SHARED_DIR

SPM = SHARED_DIR / "reference" / "hiersumm" / "spm9998_3.model"
MULTI_NEWS = SHARED_DIR / "data" / "multi-news-sample" / "validation.jsonl"
TEXTS = ["The Ilvane Institute was founded in 1987.", "Marela Dostovin received the Ostrel Prize."] * 20


def test_trained_tokenizer_round_trips_and_saves_a_loadable_hf_directory(tmp_path):
    tokenizer = train_tokenizer(TEXTS, vocab_size=120, lowercase=True)
    special = tokenizer.special
    assert len({special.pad, special.bos, special.eos}) == 3
    ids = tokenizer.encode_batch(["Marela founded the institute."])[0]
    assert special.pad not in ids and special.bos not in ids
    assert tokenizer.decode(ids + [special.eos, ids[0]]) == "marela founded the institute."
    tokenizer.save(tmp_path / "tok")
    reloaded = load_tokenizer(tmp_path / "tok")
    assert reloaded.special == special
    assert reloaded.encode_batch(["Marela founded"]) == tokenizer.encode_batch(["Marela founded"])
    assert load_tokenizer(tmp_path / "tok" / "tokenizer.json").special == special
    hf = AutoTokenizer.from_pretrained(str(tmp_path / "tok"), local_files_only=True)
    assert hf.pad_token_id == special.pad and hf.eos_token_id == special.eos


def test_tokenizer_string_round_trip():
    tokenizer = train_tokenizer(TEXTS, vocab_size=100, lowercase=False)
    copy = type(tokenizer).from_str(tokenizer.to_str())
    assert copy.encode_batch(TEXTS[:2]) == tokenizer.encode_batch(TEXTS[:2])


def test_byte_fallback_encodes_characters_the_training_text_lacks_as_bytes_and_decodes_them_back(tmp_path):
    """Without it, a name with unseen characters comes out of the tokenizer as ``<unk>``; with it, as byte pieces that
    the vocabulary (of the size asked, the 256 bytes counted) has, and decoding (also after a save and load) gives
    the name back."""
    text = "Zoë Øster met 北京 officials."
    plain = train_tokenizer(TEXTS, vocab_size=80)
    unk = plain.backend.token_to_id("<unk>")
    assert unk in plain.encode_batch([text])[0]
    tokenizer = train_tokenizer(TEXTS, vocab_size=80 + len(BYTE_PIECES), byte_fallback=True)
    assert plain.vocab_size == 80 and tokenizer.vocab_size == 80 + len(BYTE_PIECES)
    assert [tokenizer.backend.token_to_id(piece) for piece in BYTE_PIECES] == list(range(80, 80 + 256))
    ids = tokenizer.encode_batch([text])[0]
    assert unk not in ids and tokenizer.backend.token_to_id("<0xC3>") in ids  # ë: C3 AB
    assert tokenizer.decode(ids) == text
    assert tokenizer.encode_batch(TEXTS[:2]) == [[tokenizer.backend.token_to_id(token) for token in
                                                  plain.backend.encode(line).tokens] for line in TEXTS[:2]]
    assert tokenizer.encode_batch(["<0x41>"])[0] != [tokenizer.backend.token_to_id("<0x41>")]  # pieces, not text
    reloaded = load_tokenizer(tokenizer.save(tmp_path / "tok"))
    assert reloaded.decode(reloaded.encode_batch([text])[0]) == text


def test_byte_fallback_needs_room_for_the_byte_pieces():
    assert TokenizerConfig(vocab_size=300, byte_fallback=True).vocab_size == 300
    with pytest.raises(ValueError, match="tokenizer.vocab_size must be > 256 with tokenizer.byte_fallback=true"):
        TokenizerConfig(vocab_size=256, byte_fallback=True)


@pytest.mark.skipif(not SPM.is_file(), reason="official SentencePiece model not found")
def test_official_sentencepiece_model_loads_with_its_special_ids():
    pytest.importorskip("google.protobuf")
    tokenizer = load_tokenizer(SPM)
    assert tokenizer.vocab_size == 32000
    assert (tokenizer.special.pad, tokenizer.special.bos, tokenizer.special.eos) == (6, 4, 5)
    assert tokenizer.paragraph_separator_id == 7
    ids = tokenizer.encode_batch(["the ,  ."])[0]
    assert ids == [9, 10, 11]  # pieces "▁the", "▁,", "▁." (extra spaces collapsed)
    assert tokenizer.encode_batch(["a <Q> b"])[0].count(8) == 1
    text = "the school was founded in 1987 by the city council ."
    assert tokenizer.decode(tokenizer.encode_batch([text])[0] + [5, 9]) == text


@pytest.mark.skipif(not (SPM.is_file() and MULTI_NEWS.is_file()),
                    reason="official SentencePiece model or Multi-News sample not found")
def test_official_tokenizer_encodes_like_sentencepiece_itself():
    """The HF conversion gives sentencepiece's own ids on real news text (100 Multi-News documents)
    and on text where normalisation matters (NFKC, ligatures, full-width letters, quotes, spaces)."""
    sentencepiece = pytest.importorskip("sentencepiece")
    pytest.importorskip("google.protobuf")
    reference = sentencepiece.SentencePieceProcessor(model_file=str(SPM))
    tokenizer = load_tokenizer(SPM)
    texts = ["Café naïve — “quoted” 1987…", "ﬁne Ⅻ ＡＢＣ", "  leading,   inner  and trailing  ", "tab\there\nline",
             "日本語 テキスト", "emoji 😀 and \u00a0no-break space"]
    with open(MULTI_NEWS, encoding="utf-8") as handle:
        texts += [json.loads(line)["document"][:3000] for line in itertools.islice(handle, 100)]
    mismatched = [text[:60] for text in texts if tokenizer.encode_batch([text])[0] != reference.encode(text)]
    assert mismatched == []
