"""Property-based tests of the checkpoint loader: whatever a file holds (any bytes, a checkpoint cut anywhere,
any structure of plain values and tensors, a real checkpoint with one setting changed), loading it gives a
summarizer or one one-line :class:`CheckpointError`, never another exception."""

from __future__ import annotations

import functools
import io

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from hiersum.checkpoints.io import CheckpointError, TrainedNetwork, load_network
from hiersum.checkpoints.ranker import load_ranker
from tests.helpers.checkpoints import WEIGHTS_ONLY_ADVICE, summarizer_checkpoint
from tests.helpers.fuzz import FUZZ, written

pytestmark = pytest.mark.fuzz

SMALL_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 64) | st.floats(-2, 2) | st.text(max_size=6)
    | st.builds(torch.zeros, st.integers(0, 3)),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=6,
)
"""Plain values and small tensors (what ``weights_only`` loads), nested; integers small enough that no model
they describe is large."""
CHECKPOINT_LIKE = st.dictionaries(
    st.sampled_from(["state_dict", "hyper_parameters", "hiersum", "format", "model", "opt", "epoch", "x"]),
    SMALL_VALUE, max_size=4)


@functools.cache
def good_bytes() -> bytes:
    buffer = io.BytesIO()
    torch.save(summarizer_checkpoint(), buffer)
    return buffer.getvalue()


def outcome(content: bytes, load=load_network) -> object:
    """What loading a file of ``content`` gives: the loaded object, or the checkpoint error (checked)."""
    with written(content, "model.ckpt") as path:
        try:
            return load(path)
        except CheckpointError as error:
            message = str(error)
            assert "\n" not in message and str(path) in message and "expected" in message, message
            assert WEIGHTS_ONLY_ADVICE not in message, message
            return error


def saved(value: object) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


@FUZZ
@given(content=st.binary(max_size=2000))
def test_any_bytes(content):
    assert isinstance(outcome(content), CheckpointError)
    assert isinstance(outcome(content, load_ranker), CheckpointError)


@FUZZ
@given(cut=st.integers(0, 10**9))
def test_a_checkpoint_cut_anywhere(cut):
    data = good_bytes()
    result = outcome(data[: cut % (len(data) + 1)])
    assert isinstance(result, TrainedNetwork) == (cut % (len(data) + 1) == len(data))


@FUZZ
@given(value=CHECKPOINT_LIKE | SMALL_VALUE)
def test_any_structure_of_plain_values_and_tensors(value):
    assert isinstance(outcome(saved(value)), CheckpointError)
    assert isinstance(outcome(saved(value), load_ranker), CheckpointError)


@FUZZ
@given(data=st.data())
def test_a_real_checkpoint_with_one_setting_changed(data):
    checkpoint = torch.load(io.BytesIO(good_bytes()), weights_only=True)
    hparams = checkpoint["hyper_parameters"]
    section = data.draw(st.sampled_from([hparams, hparams["model"], hparams["data"], checkpoint["hiersum"]]))
    key = data.draw(st.sampled_from(sorted(section)))
    if data.draw(st.booleans()):
        del section[key]
    else:
        section[key] = data.draw(SMALL_VALUE)
    result = outcome(saved(checkpoint))
    assert isinstance(result, (TrainedNetwork, CheckpointError))
    if isinstance(result, TrainedNetwork):
        try:
            result.tokenizer  # noqa: B018  (parsed here)
        except ValueError as error:  # no tokenizer, or one that does not load: one line (summarize: exit 2)
            assert "\n" not in str(error)
