"""Model directories (``hiersum export``): ``HierSum.save_pretrained`` / ``from_pretrained`` round trips, no pickle
anywhere (written or read), every broken directory one :class:`CheckpointError` line naming the file, a pretrained
encoder's directory not needed to load, and the fingerprint a summarize output's provenance records."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from hiersum.checkpoints import load_network
from hiersum.checkpoints.directory import FILES, ModelNotes, save_model_directory
from hiersum.checkpoints.io import CheckpointError, TrainedNetwork
from hiersum.config import DecodeConfig
from hiersum.data.tokenizer import load_tokenizer
from hiersum.data.torch_files import PICKLE_PROTOCOL_2, ZIP_MAGIC
from hiersum.errors import UsageError
from hiersum.inference.resumable_output import checkpoint_sha256
from hiersum.model import HierSum
from tests.helpers import pretrained
from tests.helpers.checkpoints import assert_one_line_error, save_summarizer_checkpoint, truncated_copy
from tests.helpers.model import make_batch, make_model

NOTES = ModelNotes(generation=DecodeConfig(beam_size=3), text="# a card\n")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_summarizer_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny.ckpt")


@pytest.fixture(scope="module")
def directory(checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny checkpoint as a model directory."""
    return save_model_directory(load_network(checkpoint), tmp_path_factory.mktemp("export") / "model", NOTES)


def no_torch_load(*args, **kwargs):
    raise AssertionError("torch.load called while loading a model directory")


def test_save_pretrained_round_trip_gives_equal_weights_and_logits(tmp_path):
    model = make_model().eval()
    model.save_pretrained(tmp_path / "model")
    loaded = HierSum.from_pretrained(tmp_path / "model")
    assert not loaded.training and loaded.config == model.config
    assert loaded.state_dict().keys() == model.state_dict().keys()
    for name, tensor in model.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[name], tensor, rtol=0, atol=0, msg=name)
    assert loaded.generator.weight is loaded.decoder.embeddings.weight  # the tied table stays one tensor
    src, src_mask, tgt_in = make_batch()
    torch.testing.assert_close(loaded(src, src_mask, tgt_in).logits, model(src, src_mask, tgt_in).logits,
                               rtol=0, atol=0)


def test_from_pretrained_reads_a_local_directory_only(tmp_path):
    with pytest.raises(FileNotFoundError, match="expected a local model directory"):
        HierSum.from_pretrained("some-user/some-model")


def test_a_directory_holds_no_pickle_and_loads_without_torch_load(directory, checkpoint, monkeypatch):
    assert sorted(path.name for path in directory.iterdir()) == sorted(FILES)
    for path in directory.iterdir():
        head = path.read_bytes()[:4]
        assert not head.startswith(ZIP_MAGIC) and not head.startswith(PICKLE_PROTOCOL_2), path
    assert json.loads((directory / "generation_config.json").read_text())["beam_size"] == 3
    expected = load_network(checkpoint)
    monkeypatch.setattr(torch, "load", no_torch_load)
    loaded = load_network(directory)
    assert loaded.tokenizer_json == expected.tokenizer_json and loaded.data_config == expected.data_config
    src, src_mask, tgt_in = make_batch()
    src, tgt_in = src % loaded.model.vocab_size, tgt_in % loaded.model.vocab_size
    torch.testing.assert_close(loaded.model(src, src_mask, tgt_in).logits,
                               expected.model(src, src_mask, tgt_in).logits, rtol=0, atol=0)


def edited_config(directory: Path, change) -> None:
    config = json.loads((directory / "config.json").read_text())
    change(config)
    (directory / "config.json").write_text(json.dumps(config))


# (name, how to break the copy of a good directory, the file the message names, what it says)
BROKEN = [
    ("no weights", lambda d: (d / "model.safetensors").unlink(), "model.safetensors", "file not found"),
    ("truncated weights", lambda d: truncated_copy(d / "model.safetensors", d / "model.safetensors"),
     "model.safetensors", "is not a readable safetensors file"),
    ("weights header damaged", lambda d: (d / "model.safetensors").write_bytes(b"\xff" * 8 + b"{not json" * 20),
     "model.safetensors", "is not a readable safetensors file"),
    ("weights a pickle", lambda d: torch.save({"w": torch.zeros(2)}, d / "model.safetensors"),
     "model.safetensors", "is not a readable safetensors file"),
    ("config not JSON", lambda d: (d / "config.json").write_text("{vocab_size: 3"), "config.json", "is not JSON"),
    ("config without vocab_size", lambda d: edited_config(d, lambda c: c.pop("vocab_size")), "config.json",
     "has no 'vocab_size'"),
    ("config without a model size", lambda d: edited_config(d, lambda c: c["config"].pop("d_model")), "config.json",
     "has no 'config.d_model'"),
    ("config of another vocabulary", lambda d: edited_config(d, lambda c: c.update(vocab_size=c["vocab_size"] + 1)),
     "model.safetensors", "its weights do not fit the model config.json describes"),
    ("no tokenizer", lambda d: (d / "tokenizer.json").unlink(), "tokenizer.json", "file not found"),
    ("tokenizer damaged", lambda d: (d / "tokenizer.json").write_text('{"model": 3}'), "tokenizer.json",
     "does not load as a tokenizer"),
    ("tokenizer empty", lambda d: (d / "tokenizer.json").write_text(""), "tokenizer.json", "is an empty file"),
]


@pytest.mark.parametrize(("name", "break_it", "file", "message"), BROKEN, ids=[case[0] for case in BROKEN])
def test_every_broken_directory_is_one_checkpoint_error_naming_the_file(name, break_it, file, message, directory,
                                                                        tmp_path):
    broken = shutil.copytree(directory, tmp_path / "model")
    break_it(broken)
    with pytest.raises(CheckpointError) as error:
        load_network(broken)
    assert isinstance(error.value, UsageError)
    assert_one_line_error(str(error.value), broken / file, message, "expected a model directory of hiersum export")


def test_a_directory_that_is_no_model_directory_says_what_is_expected(tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    with pytest.raises(CheckpointError) as error:
        load_network(run)
    assert_one_line_error(str(error.value), run, "is a directory", "or a model directory of hiersum export",
                          f"give checkpoint={run / 'checkpoints' / 'last.ckpt'}", "hiersum export checkpoint=")


def test_a_pretrained_encoder_model_loads_with_its_original_directory_deleted(tmp_path):
    bert = pretrained.make_tiny_bert(tmp_path / "bert")
    tokenizer = load_tokenizer(str(bert))
    model = pretrained.network(bert, tokenizer)
    summarizer = TrainedNetwork(model=model, data_config=None, tokenizer_json=tokenizer.to_str())
    directory = save_model_directory(summarizer, tmp_path / "export", NOTES)
    assert "pretrained_encoder\": null" in (directory / "config.json").read_text()
    shutil.rmtree(bert)
    loaded = load_network(directory)
    assert loaded.model.config.pretrained_encoder is None
    src, src_mask = pretrained.grid(loaded.tokenizer, pretrained.TEXTS)
    tgt_in = pretrained.target(loaded.tokenizer)
    torch.testing.assert_close(loaded.model(src, src_mask, tgt_in).logits, model(src, src_mask, tgt_in).logits,
                               rtol=0, atol=0)


def test_a_directory_fingerprint_depends_on_its_files_not_on_where_it_is(directory, tmp_path):
    copy = shutil.copytree(directory, tmp_path / "elsewhere")
    assert checkpoint_sha256(copy) == checkpoint_sha256(directory)
    (copy / "generation_config.json").write_text("{}")
    assert checkpoint_sha256(copy) != checkpoint_sha256(directory)


def test_a_directory_of_an_earlier_version_loads_its_later_fields_at_their_defaults(directory, tmp_path):
    """A directory written before a ModelConfig field or a special id existed (here copy_oov, coverage and unk_id)
    loads, those taking their defaults (a part its network was trained without, no extended vocabulary), with the
    same weights; a field of the network's shape is still required (the BROKEN case of d_model)."""
    earlier = shutil.copytree(directory, tmp_path / "model")
    edited_config(earlier, lambda c: [c.pop("unk_id"), c["config"].pop("copy_oov"), c["config"].pop("coverage")])
    network, current = load_network(earlier).model, load_network(directory).model
    assert (network.unk_id, network.config.copy_oov, network.config.coverage) == (None, False, False)
    assert all(torch.equal(a, b) for a, b in zip(network.state_dict().values(), current.state_dict().values(),
                                                 strict=True))
