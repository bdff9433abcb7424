"""A checkpoint that records ``data.text_normalization=ptb`` (a CNN/DailyMail model) reads raw text as its
PTB-tokenized training text: the same article raw and pre-tokenized gives the same summary, detokenized for
reading; a checkpoint that records none (an earlier version) decodes as before (:mod:`hiersum.data.normalization`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from hiersum.config import DecodeConfig, SelectionOverrides, TextNormalization
from hiersum.data.normalization import readable
from hiersum.data.selection import encode_examples
from hiersum.inference import Summarizer, load_summarizer
from hiersum.inference.batched import summarize_encoded
from hiersum.inference.summary_lines import example_of

RAW = ["Repard's 35-year-old \"friend\" didn't start (the) Zedine Academy in 1991. He said: it's £5-a-week.",
       "Ginereth has spent many years as a designer; her friends can't recall it.\n\nShe rarely spoke, they said."]
PTB = ['Repard \'s 35 - year - old " friend " did n\'t start ( the ) Zedine Academy in 1991 . He said : it \'s '
       "£ 5 - a-week .",
       "Ginereth has spent many years as a designer ; her friends ca n't recall it .\n\nShe rarely spoke , they said ."]
""":data:`RAW` as CNN/DailyMail's release writes text (case aside)."""


def edited(checkpoint: Path, folder: Path, name: str, **data: str | None) -> Path:
    """The session's trained tiny checkpoint with its recorded data settings changed (None: the field removed, as
    a checkpoint of an earlier version has it)."""
    saved = torch.load(checkpoint, weights_only=True, map_location="cpu")
    for key, value in data.items():
        saved["hyper_parameters"]["data"].pop(key, None)
        if value is not None:
            saved["hyper_parameters"]["data"][key] = value
    path = folder / name
    torch.save(saved, path)
    return path


@pytest.fixture(scope="module")
def checkpoints(checkpoint, tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("normalized_input")
    return {"ptb": edited(checkpoint, folder, "ptb.ckpt", text_normalization="ptb"),
            "old": edited(checkpoint, folder, "old.ckpt", text_normalization=None)}


def test_raw_and_pretokenized_articles_give_the_same_summary(checkpoints):
    summarizer = load_summarizer(checkpoints["ptb"])
    assert summarizer.data_config.text_normalization is TextNormalization.ptb
    options = {"beam_size": 2, "min_length": 4, "max_length": 12}
    raw, tokenized = summarizer.summarize(RAW, **options), summarizer.summarize(PTB, **options)
    assert [line["summary"] for line in raw] == [line["summary"] for line in tokenized]
    assert [line["score"] for line in raw] == pytest.approx([line["score"] for line in tokenized], abs=1e-5)
    # the guard: without the normalization the model reads other ids for the two
    none = summarizer.selection(SelectionOverrides(text_normalization="none"))
    raw_ids, ptb_ids = (encode_examples([example_of({"text": text}, source="t", line=1)], summarizer.tokenizer, none)
                        for text in (RAW[0], PTB[0]))
    assert raw_ids[0].paragraphs != ptb_ids[0].paragraphs


def written(summarizer: Summarizer, texts: list[str]) -> list[str]:
    """The summaries of ``texts`` as the model writes them (the tokenizer's text, before any detokenization), with
    the checkpoint's selection and recorded search settings."""
    examples = [example_of({"text": text}, source="t", line=line) for line, text in enumerate(texts, start=1)]
    encoded = encode_examples(examples, summarizer.tokenizer, summarizer.selection(SelectionOverrides()))
    summaries = [""] * len(texts)
    for indices, batch in summarize_encoded(summarizer.model, encoded, summarizer.tokenizer,
                                            summarizer.decoding(DecodeConfig(), set()), batch_tokens=8192):
        for index, summary in zip(indices, batch, strict=True):
            summaries[index] = summary.summary
    return summaries


def test_the_summary_is_detokenized_for_reading(checkpoints):
    summarizer = load_summarizer(checkpoints["ptb"])
    lines = summarizer.summarize(RAW)
    assert [line["summary"] for line in lines] == [readable(text, "ptb") for text in written(summarizer, RAW)]


def test_a_checkpoint_without_the_field_decodes_as_before(checkpoint, checkpoints):
    """An earlier version's checkpoint reads ``none``: its summaries are the model's text as written, the same as
    a checkpoint recording ``none``."""
    old, recorded = load_summarizer(checkpoints["old"]), load_summarizer(checkpoint)
    assert "text_normalization" not in torch.load(checkpoints["old"], weights_only=True)["hyper_parameters"]["data"]
    assert old.data_config.text_normalization is TextNormalization.none
    summaries = [line["summary"] for line in old.summarize(RAW)]
    assert summaries == written(old, RAW) == [line["summary"] for line in recorded.summarize(RAW)]
