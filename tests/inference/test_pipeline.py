"""One call from Python (:func:`hiersum.inference.load_summarizer`): texts, document lists and records give, in
input order, the very lines ``hiersum summarize`` writes for them; a bad input or option fails naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hiersum.checkpoints import load_network
from hiersum.commands.summarize import summarize
from hiersum.data.schema import RecordError
from hiersum.errors import UsageError
from hiersum.inference import Summarizer, load_summarizer
from tests.helpers.checkpoints import save_summarizer_checkpoint

RECORDS = [
    {"id": "r1", "title": "alpha beta", "documents": ["alpha beta gamma.\n\nbeta gamma delta.", "epsilon zeta."]},
    {"id": "r2", "title": "", "documents": ["gamma delta epsilon.", "zeta alpha.\n\nbeta beta gamma."]},
    {"id": "r3", "documents": ["delta.\n\nalpha gamma.\n\nzeta epsilon beta."]},
]
LINE_FIELDS = {"id", "summary", "score", "n_paragraphs_kept", "n_paragraphs_dropped"}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return save_summarizer_checkpoint(tmp_path_factory.mktemp("pipeline") / "tiny.ckpt")


def test_texts_document_lists_and_records_give_one_line_each_in_input_order(checkpoint, device):
    summarizer = load_summarizer(checkpoint, device=str(device))
    inputs = ["alpha beta gamma.\n\nzeta epsilon.", ["gamma delta.", "beta alpha.\n\nzeta."], RECORDS[0],
              {"id": 7, "text": "delta epsilon zeta."}]
    lines = summarizer.summarize(inputs, beam_size=2, max_length=6, min_length=0)
    assert [line["id"] for line in lines] == ["input-1", "input-2", "r1", "7"]
    assert all(set(line) == LINE_FIELDS and isinstance(line["summary"], str) for line in lines)
    assert [line["n_paragraphs_kept"] for line in lines] == [2, 3, 4, 1]  # paragraphs, with the title of r1
    [one] = summarizer.summarize(inputs[0], beam_size=2, max_length=6, min_length=0)
    assert one == {**lines[0], "score": pytest.approx(lines[0]["score"], abs=1e-5)}  # alone: no padding


def floats_within(value, tolerance: float):
    """``value`` (JSON: dicts, lists, numbers, strings) with each float replaced by ``pytest.approx`` of it."""
    if isinstance(value, float):
        return pytest.approx(value, abs=tolerance)
    if isinstance(value, dict):
        return {key: floats_within(item, tolerance) for key, item in value.items()}
    if isinstance(value, list):
        return [floats_within(item, tolerance) for item in value]
    return value


def test_the_lines_are_those_hiersum_summarize_writes(checkpoint, device, tiny_cfg, tmp_path):
    source, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(record) + "\n" for record in RECORDS), encoding="utf-8")
    summarize(tiny_cfg(f"checkpoint={checkpoint}", f"input={source}", f"output={output}", "decode.beam_size=3",
                       "decode.n_best=2", "decode.max_length=7", "decode.min_length=1", "max_paragraphs=2",
                       "attention=true", "attention_top_k=2", name="summarize", output_dir=tmp_path / "hydra"))
    written = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]

    summarizer = load_summarizer(checkpoint, device=str(device))
    lines = summarizer.summarize(RECORDS, beam_size=3, n_best=2, max_length=7, min_length=1, max_paragraphs=2,
                                 attention_top_k=2)
    # bit-equal on a CPU; on CUDA the two batchings sum in other orders (scores and weights within 1e-5)
    expected = written if device.type == "cpu" else floats_within(written, 1e-5)
    assert [{key: value for key, value in line.items() if key != "paragraphs"} for line in lines] == expected
    assert {"n_best", "top_paragraphs"} <= set(written[0])
    for line, record in zip(lines, RECORDS, strict=True):
        assert len(line["paragraphs"]) == 2
        for paragraph in line["paragraphs"]:
            texts = [record.get("title", "")] + [p for d in record["documents"] for p in d.split("\n\n")]
            assert paragraph["text"] in texts and paragraph["attention"] > 0


def test_it_is_the_checkpoint_network_with_what_it_carries(checkpoint):
    summarizer, network = load_summarizer(checkpoint), load_network(checkpoint)
    assert isinstance(summarizer, Summarizer)
    assert summarizer.data_config == network.data_config and summarizer.model.config == network.model_config
    assert summarizer.tokenizer.vocab_size == network.tokenizer.vocab_size


def test_a_bad_input_or_option_fails_naming_it(checkpoint, device, tmp_path):
    summarizer = load_summarizer(checkpoint, device=str(device))
    with pytest.raises(RecordError, match=r"input:2: field 'documents': expected"):
        summarizer.summarize(["alpha beta.", {"id": "x", "documents": []}])
    with pytest.raises(TypeError, match="beam_width"):
        summarizer.summarize("alpha beta.", beam_width=2)
    with pytest.raises(ValueError, match="n_best"):
        summarizer.summarize("alpha beta.", beam_size=2, n_best=3)
    with pytest.raises(UsageError, match="not found"):
        load_summarizer(tmp_path / "missing.ckpt")
    with pytest.raises(UsageError, match="precision=16 needs device=cuda"):
        load_summarizer(checkpoint, precision="16")
