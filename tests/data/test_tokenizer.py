from transformers import AutoTokenizer

from hiersum.data.tokenizer import load_tokenizer, train_tokenizer

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
