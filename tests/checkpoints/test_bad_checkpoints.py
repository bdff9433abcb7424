"""Every way a file can fail to be the checkpoint expected gives one :class:`CheckpointError` (a UsageError):
one line naming the file, what it is and what was expected, the original exception chained, never PyTorch's
advice to load with ``weights_only=False``; the same for rankers, official checkpoints, averaging, resuming
and WikiSum shards."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from hiersum.checkpoints.averaging import average_checkpoints
from hiersum.checkpoints.io import CheckpointError, load_network, read_training_checkpoint
from hiersum.checkpoints.official import load_official_hiersumm
from hiersum.checkpoints.ranker import load_ranker, load_ranker_scorer
from hiersum.cli.common import usage_errors
from hiersum.data.formats.wikisum import shard_records
from hiersum.data.torch_files import TorchFileError
from hiersum.errors import UsageError
from tests.helpers.checkpoints import (
    assert_one_line_error,
    digest,
    official_like,
    save_ranker_checkpoint,
    summarizer_checkpoint,
    truncated_copy,
)


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real checkpoint of the tiny model."""
    path = tmp_path_factory.mktemp("good") / "good.ckpt"
    torch.save(summarizer_checkpoint(), path)
    return path


@pytest.fixture(scope="module")
def ranker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_ranker_checkpoint(tmp_path_factory.mktemp("ranker") / "ranker.pt")


def changed(good: Path, target: Path, change) -> Path:
    """``target``: the checkpoint ``good`` after ``change(checkpoint)``."""
    checkpoint = torch.load(good, weights_only=True)
    change(checkpoint)
    torch.save(checkpoint, target)
    return target


def written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def without_vocab_size(checkpoint: dict) -> None:
    del checkpoint["hyper_parameters"]["vocab_size"]


def grown_vocabulary(checkpoint: dict) -> None:
    checkpoint["hyper_parameters"]["vocab_size"] += 1


def dropped_weight(checkpoint: dict) -> None:
    checkpoint["state_dict"].pop(sorted(checkpoint["state_dict"])[0])


def weight_as_int(checkpoint: dict) -> None:
    checkpoint["state_dict"][sorted(checkpoint["state_dict"])[0]] = 3


class Unsafe:
    """A class ``weights_only`` refuses to build."""


# (name, how to make the file at ``path`` (given the good checkpoint and the ranker), what the message says,
#  whether an original exception is chained)
CASES = [
    ("missing", lambda path, good, ranker: path, "checkpoint not found", False),
    ("directory", lambda path, good, ranker: path.mkdir() or path,
     "is a directory; expected a hiersum checkpoint", False),
    ("empty", lambda path, good, ranker: written(path, b""), "is an empty file", False),
    ("truncated", lambda path, good, ranker: truncated_copy(good, path), "is a truncated or damaged torch file", True),
    ("random bytes", lambda path, good, ranker: written(path, bytes(range(7, 250))),
     "is not a torch file (its first bytes are 07 08 09", True),
    ("text", lambda path, good, ranker: written(path, b"model weights: see README\n"),
     "is a text file (starting 'model weights: see README'), not a torch file", True),
    ("unsafe object", lambda path, good, ranker: torch.save({"state_dict": Unsafe()}, path) or path,
     "holds objects that no hiersum file holds (tests.checkpoints.test_bad_checkpoints.Unsafe)", True),
    ("list", lambda path, good, ranker: torch.save([1, 2], path) or path,
     "holds a list of 2 items, not a hiersum checkpoint", False),
    ("tensor", lambda path, good, ranker: torch.save(torch.zeros(2, 3), path) or path,
     "holds a tensor of shape [2, 3], not a hiersum checkpoint", False),
    ("foreign dict", lambda path, good, ranker: torch.save({"weights": torch.zeros(1)}, path) or path,
     "holds a dict with keys ['weights'], not a hiersum checkpoint", False),
    ("official", lambda path, good, ranker: torch.save(official_like(), path) or path,
     "holds an official hiersumm checkpoint; expected a hiersum checkpoint", False),
    ("ranker", lambda path, good, ranker: ranker,
     "holds a ranker checkpoint of hiersum train-ranker; expected a hiersum checkpoint", False),
    ("missing key", lambda path, good, ranker: changed(good, path, without_vocab_size),
     "its 'hyper_parameters' have no 'vocab_size'", True),
    ("weights of another shape", lambda path, good, ranker: changed(good, path, grown_vocabulary),
     "its weights do not fit the model its settings describe: ", False),
    ("weight missing", lambda path, good, ranker: changed(good, path, dropped_weight), "1 missing (e.g. ", False),
    ("weight not a tensor", lambda path, good, ranker: changed(good, path, weight_as_int),
     "is a int, not a tensor", False),
]


@pytest.mark.parametrize(("name", "make", "message", "chained"), CASES, ids=[case[0] for case in CASES])
def test_every_bad_checkpoint_is_one_checkpoint_error(name, make, message, chained, good, ranker, tmp_path):
    path = make(tmp_path / "bad.ckpt", good, ranker)
    before = digest(path) if path.is_file() else None
    with pytest.raises(CheckpointError) as error:
        load_network(path)
    assert isinstance(error.value, UsageError)
    assert_one_line_error(str(error.value), path, message)
    assert (error.value.__cause__ is not None) == chained
    assert (digest(path) if path.is_file() else None) == before


def test_a_foreign_checkpoint_names_the_command_it_belongs_to(good, ranker, tmp_path):
    official = tmp_path / "model_step_5.pt"
    torch.save(official_like(), official)
    with pytest.raises(CheckpointError, match=rf"hiersum import-hiersumm --checkpoint {official} --output"):
        load_network(official)
    with pytest.raises(CheckpointError, match="give it as ranker= of hiersum rank"):
        load_network(ranker)
    with pytest.raises(CheckpointError) as error:
        load_ranker(good)
    assert_one_line_error(str(error.value), good, "holds a hiersum checkpoint; expected a ranker checkpoint",
                          "give it as checkpoint= of hiersum summarize")
    with pytest.raises(CheckpointError, match="holds a hiersum checkpoint; expected an official hiersumm"):
        load_official_hiersumm(good)


def test_ranker_official_average_and_resume_read_through_the_same_loader(good, ranker, tmp_path):
    truncated = truncated_copy(ranker, tmp_path / "ranker.pt")
    for load in (load_ranker, load_ranker_scorer):
        with pytest.raises(CheckpointError) as error:
            load(truncated)
        assert_one_line_error(str(error.value), truncated, "truncated or damaged torch file",
                              "expected a ranker checkpoint of hiersum train-ranker")
    with pytest.raises(CheckpointError, match="ranker checkpoint not found"):
        load_ranker_scorer(tmp_path / "none.pt")
    torch.save(official_like(torch.zeros(4)), tmp_path / "official.pt")  # a 1-d embedding table
    with pytest.raises(CheckpointError) as error:
        load_official_hiersumm(tmp_path / "official.pt")
    assert_one_line_error(str(error.value), tmp_path / "official.pt", "its 'model' and 'opt' do not describe a model")
    (tmp_path / "text.ckpt").write_text("not a checkpoint")
    with pytest.raises(CheckpointError, match="text.ckpt: is a text file"):
        average_checkpoints([good, tmp_path / "text.ckpt"], tmp_path / "averaged.ckpt")
    assert not (tmp_path / "averaged.ckpt").exists()
    with pytest.raises(CheckpointError) as error:
        read_training_checkpoint(good)
    assert_one_line_error(str(error.value), good, "is an evaluation checkpoint (no 'epoch', 'global_step', "
                          "'optimizer_states'", "expected a training checkpoint of hiersum train to resume from")


def test_a_wikisum_shard_that_is_no_torch_file_is_one_error(tmp_path):
    shard = tmp_path / "WIKI.train.0.pt"
    shard.write_bytes(os.urandom(64))
    with pytest.raises(TorchFileError, match="expected a WikiSum shard"):
        list(shard_records(shard))
    torch.save({"src": []}, shard)
    with pytest.raises(TorchFileError, match=r"holds a dict with keys \['src'\], not a list; expected a WikiSum"):
        list(shard_records(shard))


def test_hydra_full_error_re_raises_with_the_hidden_cause(tmp_path, monkeypatch, capsys):
    (tmp_path / "bad.ckpt").write_bytes(b"PK\x03\x04 cut")
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    with pytest.raises(SystemExit) as exit_info, usage_errors("hiersum summarize"):
        load_network(tmp_path / "bad.ckpt")
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.startswith("hiersum summarize: error: ")
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    with pytest.raises(UsageError) as error, usage_errors("hiersum rank"):
        try:
            load_network(tmp_path / "bad.ckpt")
        except CheckpointError as hidden:  # as hiersum rank wraps it
            raise UsageError(f"cannot load ranker: {hidden}") from None
    assert isinstance(error.value.__context__, CheckpointError) and not error.value.__suppress_context__
    assert error.value.__context__.__cause__ is not None  # torch's own error
