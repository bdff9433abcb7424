"""Targets cut at ``data.max_target_tokens``: encoding marks them (with and without ``model.copy_oov``), the mark
survives the prepared cache, and ``data.eos_after_truncation=false`` trains a cut target without an EOS where its
reference went on, while a target that fits, and every target by default, ends in EOS as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from hiersum.config import DataConfig
from hiersum.data.batching import collate
from hiersum.data.corpus_splits import read_split
from hiersum.data.datamodule import SummarizationDataModule
from hiersum.data.prepared import prepare_split
from hiersum.data.schema import EncodedExample, Example
from hiersum.data.selection import EncodingConfig, encode_examples, encoding_config
from hiersum.data.tokenizer import SubwordTokenizer, train_tokenizer

PAD, BOS, EOS = 0, 1, 2


@pytest.fixture(scope="module")
def tokenizer() -> SubwordTokenizer:
    return train_tokenizer(["the cat met a dog then the dog left"] * 20, vocab_size=60)


def encoded_example(target: list[int], *, truncated: bool) -> EncodedExample:
    return EncodedExample(id="e", paragraphs=[[7]], target=target, references=["r"], provenance=[],
                          target_truncated=truncated)


@pytest.mark.parametrize("copy_oov", [False, True])
def test_a_reference_longer_than_the_cut_is_marked_and_one_that_fits_is_not(tokenizer, copy_oov):
    examples = [Example(id=str(i), title="", documents=[["the cat met a dog"]], references=[reference])
                for i, reference in enumerate(["the cat left", "the cat met a dog then the dog left"])]
    n_tokens = [len(ids) for ids in tokenizer.encode_batch([example.references[0] for example in examples])]
    config = EncodingConfig(max_target_tokens=n_tokens[0], copy_oov=copy_oov)
    fits, cut = encode_examples(examples, tokenizer, config)
    assert (fits.target_truncated, cut.target_truncated) == (False, True)
    assert len(fits.target) == len(cut.target) == n_tokens[0] < n_tokens[1]  # a target exactly at the cut: whole
    assert cut.target == tokenizer.encode_batch(examples[1].references[:1])[0][: n_tokens[0]]


def test_by_default_every_target_ends_in_eos_as_the_official_code_trains():
    batch = collate([encoded_example([11, 12], truncated=True), encoded_example([14], truncated=False)],
                    pad_id=PAD, bos_id=BOS, eos_id=EOS)
    assert batch.tgt_in.tolist() == [[BOS, 11, 12], [BOS, 14, PAD]]
    assert batch.tgt_out.tolist() == [[11, 12, EOS], [14, EOS, PAD]]
    assert batch.tgt_mask.tolist() == [[True, True, True], [True, True, False]]


def test_without_eos_after_truncation_a_cut_target_predicts_its_tokens_and_no_end():
    examples = [encoded_example([11, 12, 13], truncated=True), encoded_example([14, 15], truncated=False)]
    batch = collate(examples, pad_id=PAD, bos_id=BOS, eos_id=EOS, eos_after_truncation=False)
    assert batch.tgt_in.tolist() == [[BOS, 11, 12], [BOS, 14, 15]]
    assert batch.tgt_out.tolist() == [[11, 12, 13], [14, 15, EOS]]
    assert batch.tgt_mask.all()
    assert batch.target_labels().eq(EOS).sum(-1).tolist() == [0, 1]
    assert batch.n_target_tokens == 6  # one label fewer than with the EOS: the loss averages over what it trains


def test_the_mark_survives_the_prepared_cache_and_reaches_the_training_batches(tiny_corpus: Path, tmp_path):
    examples = read_split(tiny_corpus / "train.jsonl")
    tokenizer = train_tokenizer([p for e in examples for d in e.documents for p in d], vocab_size=300)
    lengths = sorted(len(ids) for ids in tokenizer.encode_batch([e.references[0] for e in examples]))
    config = DataConfig(path=str(tiny_corpus), cache_dir=str(tmp_path), max_target_tokens=lengths[len(lengths) // 2],
                        batch_tokens=4096, eos_after_truncation=False)
    prepared = prepare_split(config, "train", tokenizer)
    expected = encode_examples(examples, tokenizer, encoding_config(config))
    assert [prepared[i] for i in range(len(prepared))] == expected
    marks = [prepared[i].target_truncated for i in range(len(prepared))]
    assert any(marks) and not all(marks)  # the corpus has references on both sides of the cut

    datamodule = SummarizationDataModule(config, tokenizer)
    datamodule.setup("fit")
    ended = {}
    for batch in datamodule.loader("train", distributed=False):
        labels = batch.target_labels()
        for example, row in zip(batch.sources, labels, strict=True):
            ended[example.id] = bool(row.eq(tokenizer.special.eos).any())
    assert ended == {prepared[i].id: not prepared[i].target_truncated for i in range(len(prepared))}
