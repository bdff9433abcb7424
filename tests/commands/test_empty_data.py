"""Empty or degenerate data is refused before training, in one line naming the file: a train split without
records (the tokenizer would learn nothing), a validation or test split without records, a split whose every
record was skipped, and a tokenizer's train split with (near) no text."""

from __future__ import annotations

import pytest

from hiersum.commands.evaluate import evaluate
from hiersum.commands.train import train
from hiersum.data.tokenizer import train_tokenizer
from hiersum.errors import UsageError
from tests.helpers.cli import assert_usage_error, run_in_process, train_args
from tests.helpers.corpus import copy_corpus


@pytest.fixture()
def corpus(tiny_corpus, tmp_path):
    return copy_corpus(tiny_corpus, tmp_path / "corpus")


def test_an_empty_train_split_stops_before_anything_is_trained(corpus, tiny_cfg, tmp_path):
    (corpus / "train.jsonl").write_text("")
    with pytest.raises(UsageError, match=r"train\.jsonl: expected text to train the tokenizer on, found 0 texts"):
        train(tiny_cfg(f"data.path={corpus}", "debug=fast_dev_run"))
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_a_tokenizer_given_and_an_empty_train_split_still_stops(corpus, tiny_cfg, tmp_path):
    tokenizer = train_tokenizer([line for line in (corpus / "test.jsonl").read_text().splitlines()] * 3,
                                vocab_size=200)
    tokenizer.save(tmp_path / "tokenizer")
    (corpus / "train.jsonl").write_text("\n\n")
    with pytest.raises(UsageError, match=r"train\.jsonl: expected train examples, found none \(the split holds no"):
        train(tiny_cfg(f"data.path={corpus}", f"tokenizer.path={tmp_path / 'tokenizer'}", "debug=fast_dev_run"))


@pytest.mark.parametrize("split", ["validation", "test"])
def test_an_empty_evaluation_split_stops_before_training(corpus, tiny_cfg, split):
    (corpus / f"{split}.jsonl").write_text("")
    with pytest.raises(UsageError, match=rf"{split}\.jsonl: expected {split} examples, found none"):
        train(tiny_cfg(f"data.path={corpus}", "debug=fast_dev_run"))


def test_a_split_whose_every_record_was_skipped_says_so(corpus, tiny_cfg):
    (corpus / "validation.jsonl").write_text('{"documents": 3}\n{"id": "x"}\n')
    with pytest.raises(UsageError, match=r"validation\.jsonl: expected validation examples, found none \(all 2 "
                                         r"records were malformed and skipped"):
        train(tiny_cfg(f"data.path={corpus}", "data.on_error=skip", "debug=fast_dev_run"))


def test_a_train_split_of_near_nothing_gives_no_tokenizer(corpus, tiny_cfg):
    (corpus / "train.jsonl").write_text('{"documents": ["a"], "summary": "a"}\n')
    with pytest.raises(UsageError, match=r"found 2 texts giving \d+ tokens \(at least 16\)"):
        train(tiny_cfg(f"data.path={corpus}", "debug=fast_dev_run"))


def test_scoring_predictions_on_an_empty_split_is_refused(corpus, tiny_cfg, tmp_path):
    (corpus / "test.jsonl").write_text("")
    (tmp_path / "predictions.jsonl").write_text("")
    with pytest.raises(UsageError, match=r"test\.jsonl: expected test examples, found none"):
        evaluate(tiny_cfg(f"predictions={tmp_path / 'predictions.jsonl'}", f"data.path={corpus}", name="evaluate"))


@pytest.mark.slow
def test_the_command_says_it_in_one_line(corpus, tmp_path, monkeypatch, capsys):
    """``hiersum train``'s ``main`` in process: its exit status and stderr."""
    (corpus / "train.jsonl").write_text("")
    result = run_in_process("hiersum", ["train", *train_args(corpus, tmp_path / "run", "debug=fast_dev_run")],
                            monkeypatch, capsys)
    assert_usage_error(result.returncode, result.stderr, "hiersum train: error:", "train.jsonl", "found 0 texts")
