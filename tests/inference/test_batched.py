"""Batched inference (:func:`hiersum.inference.summarize_encoded`): every example once, and the same summary
whatever batch it is decoded in (batching and padding change nothing), equal to decoding it alone with
:func:`hiersum.decoding.generate`."""

from __future__ import annotations

import torch

from hiersum.config import DataConfig, DecodeConfig
from hiersum.data.schema import Example
from hiersum.data.selection import encode_examples, encoding_config
from hiersum.data.tokenizer import train_tokenizer
from hiersum.decoding import GenerationOptions, generate
from hiersum.inference import iter_batches, summarize_encoded
from hiersum.model.summarizer import HierSum
from tests.helpers.config import tiny_model_config

SENTENCES = ["the cat sat on the mat", "a dog ran in the park today", "the bird sang", "it rained all day long",
             "children played outside until dark", "a storm came in from the sea"]


def examples() -> list[Example]:
    """Six examples of 1 to 3 documents of uneven lengths (uneven padding in any batch)."""
    return [Example(id=f"e{i}", title=SENTENCES[i],
                    documents=[SENTENCES[: 1 + i % 3], SENTENCES[i:][: 1 + i % 2], *([[SENTENCES[-1]]] * (i % 3))])
            for i in range(6)]


def setup():
    tokenizer = train_tokenizer(SENTENCES * 5, vocab_size=90)
    torch.manual_seed(0)
    special = tokenizer.special
    model = HierSum(tiny_model_config(), vocab_size=tokenizer.vocab_size, pad_id=special.pad, bos_id=special.bos,
                    eos_id=special.eos).eval()
    encoded = encode_examples(examples(), tokenizer, encoding_config(DataConfig(path=""), evaluation=True))
    return model, tokenizer, encoded


def decoded(model, encoded, tokenizer, decode, batch_tokens):
    found = {}
    for indices, summaries in summarize_encoded(model, encoded, tokenizer, decode, batch_tokens=batch_tokens):
        for index, summary in zip(indices, summaries, strict=True):
            assert index not in found
            found[index] = summary
    assert sorted(found) == list(range(len(encoded)))
    return found


def test_every_example_once_and_the_same_summary_in_any_batch():
    model, tokenizer, encoded = setup()
    decode = DecodeConfig(beam_size=3, max_length=12, min_length=2, n_best=2)
    one_by_one = decoded(model, encoded, tokenizer, decode, batch_tokens=1)
    together = decoded(model, encoded, tokenizer, decode, batch_tokens=100_000)
    batches = list(iter_batches(encoded, tokenizer, batch_tokens=100_000, max_batch_size=16))
    assert len(batches) == 1 and batches[0][1].src.shape[0] == len(encoded)
    assert len({summary.summary for summary in together.values()}) > 1  # the inputs matter
    for index, summary in together.items():
        assert (summary.id, summary.summary, len(summary.n_best)) == (
            one_by_one[index].id, one_by_one[index].summary, 2)
        assert abs(summary.score - one_by_one[index].score) < 1e-4


def test_a_summary_is_what_generate_gives_the_example_alone():
    model, tokenizer, encoded = setup()
    decode = DecodeConfig(beam_size=2, max_length=10, min_length=1)
    found = decoded(model, encoded, tokenizer, decode, batch_tokens=100_000)
    for index in (0, 3, 5):
        [(_, batch)] = list(iter_batches([encoded[index]], tokenizer, batch_tokens=100_000, max_batch_size=1))
        with torch.inference_mode():
            out = generate(model, batch.src, batch.src_mask, GenerationOptions.from_config(decode))
        assert found[index].summary == tokenizer.decode(out.sequences[0])
