"""The tokenizer a checkpoint carries (hiersum.checkpoints.contents.checkpoint_tokenizer), the one function the
commands and a resumed training read it with: from a loaded TrainedNetwork or a checkpoint's dict, none or one that
does not load is a one-line CheckpointError (a usage error: exit status 2) naming the file and what to do."""

from __future__ import annotations

import pytest

from hiersum.checkpoints.contents import CHECKPOINT_EXTRA_KEY, TrainedNetwork, checkpoint_tokenizer
from hiersum.checkpoints.kinds import RESUME, CheckpointError
from hiersum.data.tokenizer import train_tokenizer
from hiersum.errors import UsageError
from tests.helpers.checkpoints import assert_one_line_error


def carrying(tokenizer_json: str | None, *, loaded: bool) -> TrainedNetwork | dict:
    """A loaded summarizer (no network needed here) or a checkpoint dict that carries ``tokenizer_json``."""
    if loaded:
        return TrainedNetwork(model=None, data_config=None, tokenizer_json=tokenizer_json)  # type: ignore[arg-type]
    return {CHECKPOINT_EXTRA_KEY: {} if tokenizer_json is None else {"tokenizer_json": tokenizer_json}}


@pytest.mark.parametrize("loaded", [True, False], ids=["summarizer", "checkpoint-dict"])
def test_the_tokenizer_a_checkpoint_carries(loaded):
    tokenizer = train_tokenizer(["the cat sat on the mat", "a dog ran"] * 5, vocab_size=60)
    found = checkpoint_tokenizer(carrying(tokenizer.to_str(), loaded=loaded), "run.ckpt")
    assert found.encode_batch(["the cat"]) == tokenizer.encode_batch(["the cat"])


@pytest.mark.parametrize("loaded", [True, False], ids=["summarizer", "checkpoint-dict"])
@pytest.mark.parametrize(("tokenizer_json", "expected"), [
    (None, "carries no tokenizer; expected a hiersum checkpoint"),
    ("", "carries no tokenizer"),
    ('{"not": "a tokenizer"}', "its tokenizer ('hiersum.tokenizer_json') does not load ("),
])
def test_no_tokenizer_or_a_broken_one_is_one_line_naming_the_file(loaded, tokenizer_json, expected):
    with pytest.raises(CheckpointError) as caught:
        checkpoint_tokenizer(carrying(tokenizer_json, loaded=loaded), "run.ckpt")
    assert isinstance(caught.value, UsageError)
    assert_one_line_error(str(caught.value), "run.ckpt", expected)
    if not tokenizer_json:
        assert str(caught.value).endswith("; import it again with hiersum import-hiersumm --tokenizer "
                                          "SPM_MODEL_OR_TOKENIZER_JSON")


def test_the_kind_says_what_was_expected():
    with pytest.raises(CheckpointError, match=r"^last.ckpt: carries no tokenizer; expected a training checkpoint"):
        checkpoint_tokenizer({}, "last.ckpt", RESUME)


def test_a_loaded_network_parses_its_tokenizer_once():
    tokenizer = train_tokenizer(["the cat sat on the mat", "a dog ran"] * 5, vocab_size=60)
    network = carrying(tokenizer.to_str(), loaded=True)
    first = network.tokenizer
    assert network.tokenizer is first and checkpoint_tokenizer(network, "run.ckpt") is first
