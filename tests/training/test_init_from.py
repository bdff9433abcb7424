"""The parts of a fine-tuning run (hiersum.training.init_from) without a Trainer: which model settings a command line
may change against the checkpoint's, the starting point read (and refused) as a checkpoint or model directory, its
weights copied into the new network with the added parts left fresh. The runs themselves:
tests/commands/test_train_init_from.py."""

from __future__ import annotations

import logging
from dataclasses import fields

import pytest
import torch

from hiersum.checkpoints.kinds import CheckpointError
from hiersum.config import ModelConfig, TokenizerConfig, TrainConfig
from hiersum.config.model_fields import FREE_FIELDS, PART_FIELDS, SHAPE_FIELDS
from hiersum.errors import UsageError
from hiersum.model.summarizer import HierSum
from hiersum.training.init_from import (
    dry_run_config,
    fine_tuned_model_config,
    fine_tuning,
    load_starting_weights,
    read_starting_point,
)
from tests.helpers.checkpoints import assert_one_line_error, save_ranker_checkpoint, save_summarizer_checkpoint
from tests.helpers.config import tiny_model_config

SOURCE = "trained.ckpt"
"""The ``init_from`` the refusals name."""


def test_every_model_setting_is_of_one_kind():
    """A new ModelConfig field must be classified: shape (refused), part (added fresh) or free (taken)."""
    kinds = [SHAPE_FIELDS, set(PART_FIELDS), FREE_FIELDS]
    for field in fields(ModelConfig):
        assert sum(field.name in kind for kind in kinds) == 1, field.name
    assert set().union(*kinds) == {field.name for field in fields(ModelConfig)}


def test_the_checkpoints_settings_are_the_base_and_the_given_ones_apply_on_top():
    trained = tiny_model_config(dropout=0.0, pooling_penalty=0.0)
    given = ModelConfig()  # model=small, the default: none of it given, none of it taken
    assert fine_tuned_model_config(trained, given, (), source=SOURCE) == trained
    free = ModelConfig(dropout=0.3, pooling_penalty=0.5)
    tuned = fine_tuned_model_config(trained, free, {"dropout", "pooling_penalty"}, source=SOURCE)
    assert (tuned.dropout, tuned.pooling_penalty, tuned.d_model) == (0.3, 0.5, trained.d_model)
    same_shape = ModelConfig(d_model=trained.d_model, heads=trained.heads)
    assert fine_tuned_model_config(trained, same_shape, {"d_model", "heads"}, source=SOURCE) == trained


@pytest.mark.parametrize(("given", "names", "expected"), [
    ({"d_model": 32}, {"d_model"}, ["model.d_model=32 (the checkpoint's: 16)"]),
    ({"decoder_layers": 3, "heads": 4}, {"decoder_layers", "heads", "dropout"},
     ["model.decoder_layers=3 (the checkpoint's: 1)", "model.heads=4 (the checkpoint's: 2)", "these options"]),
    ({"encoder": "flat", "inter_layers": []}, {"encoder"}, ["model.encoder=flat (the checkpoint's: hierarchical)"]),
])
def test_a_setting_that_changes_the_networks_shape_is_refused_in_one_line(given, names, expected):
    trained = tiny_model_config()
    with pytest.raises(UsageError) as refused:
        fine_tuned_model_config(trained, tiny_model_config(**given), names, source=SOURCE)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"init_from={SOURCE}: "), message
    assert "would change the network the checkpoint holds" in message, message
    for text in expected:
        assert text in message, message


def test_a_part_is_added_never_dropped():
    plain, copying = tiny_model_config(), tiny_model_config(copy_attention=True, coverage=True)
    assert fine_tuned_model_config(plain, copying, {"copy_attention", "coverage"}, source=SOURCE) == copying
    with pytest.raises(UsageError, match=r"model.copy_attention=false \(the checkpoint's: true\)"):
        fine_tuned_model_config(copying, plain, {"copy_attention", "coverage"}, source=SOURCE)
    similarity, discourse = tiny_model_config(graph="similarity"), tiny_model_config(graph="discourse")
    assert fine_tuned_model_config(plain, similarity, {"graph"}, source=SOURCE).graph == "similarity"
    with pytest.raises(UsageError, match=r"model.graph=discourse \(the checkpoint's: similarity\)"):
        fine_tuned_model_config(similarity, discourse, {"graph"}, source=SOURCE)


def test_settings_the_model_refuses_together_are_a_usage_error():
    with pytest.raises(UsageError, match=r"^init_from=trained.ckpt: model.coverage=true is the copy attention's"):
        fine_tuned_model_config(tiny_model_config(), tiny_model_config(copy_attention=True, coverage=True),
                                {"coverage"}, source=SOURCE)


def test_init_from_with_a_ckpt_path_file_is_refused_and_last_continues_the_run():
    with pytest.raises(ValueError, match=r"^init_from=a.ckpt and ckpt_path=b.ckpt are exclusive: ckpt_path resumes"):
        TrainConfig(init_from="a.ckpt", ckpt_path="b.ckpt", checkpoint_every_n_steps=None)
    assert TrainConfig(init_from="a.ckpt", ckpt_path="last").ckpt_path == "last"


def fine_tuning_config(tmp_path, init_from: str, **model) -> TrainConfig:
    return TrainConfig(init_from=init_from, ckpt_path=None, model=ModelConfig(**model), tokenizer=TokenizerConfig(),
                       paths={"output_dir": str(tmp_path / "run")})


def test_the_starting_point_gives_its_settings_and_tokenizer(tmp_path):
    path = save_summarizer_checkpoint(tmp_path / "start.ckpt")
    cfg, start = fine_tuning(fine_tuning_config(tmp_path, str(path), dropout=0.2), None, {"dropout"})
    assert start is not None and start.path == path
    assert cfg.model == tiny_model_config(dropout=0.2)
    assert start.tokenizer.to_str() == torch.load(path, weights_only=True)["hiersum"]["tokenizer_json"]
    record = start.record()
    assert record["path"] == str(path.absolute()) and len(record["sha256"]) == 64
    untouched = TrainConfig(ckpt_path=None, model=ModelConfig())
    assert fine_tuning(untouched, None, {"dropout"}) == (untouched, None)


def test_a_resumed_fine_tuning_run_takes_its_own_checkpoints_settings(tmp_path):
    """A fine-tuning run continued from its own checkpoint (ckpt_path=last, a restarted job): the starting point is not
    read, the settings are the checkpoint's."""
    resumed = {"hyper_parameters": {"model": tiny_model_config(copy_attention=True).__dict__}}
    cfg, start = fine_tuning(fine_tuning_config(tmp_path, str(tmp_path / "gone.ckpt")), resumed)
    assert start is None and cfg.model == tiny_model_config(copy_attention=True)


def test_a_dry_run_measures_the_trained_networks_settings_and_vocabulary(tmp_path):
    path = save_summarizer_checkpoint(tmp_path / "start.ckpt")
    cfg = dry_run_config(fine_tuning_config(tmp_path, str(path), dropout=0.2), {"dropout"})
    vocabulary = torch.load(path, weights_only=True)["hyper_parameters"]["vocab_size"]
    assert cfg.model == tiny_model_config(dropout=0.2) and cfg.tokenizer.vocab_size == vocabulary != 4000
    untouched = TrainConfig(ckpt_path=None, model=ModelConfig())
    assert dry_run_config(untouched) == untouched


def test_a_tokenizer_option_is_refused(tmp_path):
    path = save_summarizer_checkpoint(tmp_path / "start.ckpt")
    with pytest.raises(UsageError, match=r"^init_from=.*start.ckpt: the tokenizer is the checkpoint's; "
                                         r"tokenizer.vocab_size does not apply \(leave it out\)$"):
        fine_tuning(fine_tuning_config(tmp_path, str(path)), None, (), {"vocab_size"})


def test_what_is_no_starting_point_is_refused_in_one_line(tmp_path):
    missing = tmp_path / "missing.ckpt"
    with pytest.raises(CheckpointError) as refused:
        read_starting_point(missing)
    assert_one_line_error(str(refused.value), missing, "checkpoint not found", "to fine-tune from (init_from=)")
    ranker = save_ranker_checkpoint(tmp_path / "ranker.ckpt")
    with pytest.raises(CheckpointError) as refused:
        read_starting_point(ranker)
    assert_one_line_error(str(refused.value), ranker, "holds a ranker checkpoint", "(init_from=)")
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    with pytest.raises(CheckpointError) as refused:
        read_starting_point(run)
    assert_one_line_error(str(refused.value), run, "is a directory",
                          f"give init_from={run / 'checkpoints' / 'last.ckpt'}")


def test_a_starting_point_without_a_tokenizer_is_refused(tmp_path):
    path = save_summarizer_checkpoint(tmp_path / "start.ckpt")
    checkpoint = torch.load(path, weights_only=True)
    checkpoint["hiersum"]["tokenizer_json"] = None
    torch.save(checkpoint, path)
    with pytest.raises(CheckpointError) as refused:
        read_starting_point(path)
    assert_one_line_error(str(refused.value), path, "carries no tokenizer", "(init_from=)")


def built(config: ModelConfig, start_network: HierSum, device: torch.device, seed: int = 7) -> HierSum:
    """A new network of ``config`` drawn with ``seed`` (as the fit builds it, after seeding), on ``device``."""
    torch.manual_seed(seed)
    return HierSum(config, vocab_size=start_network.vocab_size, pad_id=start_network.pad_id,
                   bos_id=start_network.bos_id, eos_id=start_network.eos_id,
                   separator_id=start_network.separator_id).to(device)


def test_the_weights_are_the_starting_points(tmp_path, caplog, device):
    start = read_starting_point(save_summarizer_checkpoint(tmp_path / "start.ckpt"))
    network = built(start.network.model_config, start.network.model, device)
    with caplog.at_level(logging.INFO, logger="hiersum"):
        assert load_starting_weights(network, start) == []
    assert not caplog.records
    for name, weight in start.network.model.state_dict().items():
        assert torch.equal(network.state_dict()[name].cpu(), weight.cpu()), name


def test_an_added_part_starts_fresh_and_one_line_names_it(tmp_path, caplog, device):
    start = read_starting_point(save_summarizer_checkpoint(tmp_path / "start.ckpt"))
    config = fine_tuned_model_config(start.network.model_config, tiny_model_config(copy_attention=True),
                                     {"copy_attention"}, source=start.path)
    network, fresh_network = built(config, start.network.model, device), built(config, start.network.model, device)
    with caplog.at_level(logging.INFO, logger="hiersum"):
        fresh = load_starting_weights(network, start)
    assert fresh and all(name.startswith("copy_attention.") for name in fresh)
    trained = start.network.model.state_dict()
    for name, weight in network.state_dict().items():
        expected = fresh_network.state_dict()[name] if name in fresh else trained[name]
        assert torch.equal(weight.cpu(), expected.cpu()), name
    [line] = [record.getMessage() for record in caplog.records]
    assert line.startswith(f"init_from={start.path}: model.copy_attention=true adds parts the checkpoint lacks, "
                           "which start fresh: "), line
    assert f"{len(fresh)} weights" in line and all(name in line for name in fresh), line


def test_weights_that_do_not_fit_are_a_checkpoint_error(tmp_path, device):
    start = read_starting_point(save_summarizer_checkpoint(tmp_path / "start.ckpt"))
    wider = built(tiny_model_config(d_model=32, ff_size=64), start.network.model, device)
    with pytest.raises(CheckpointError) as refused:
        load_starting_weights(wider, start)
    assert_one_line_error(str(refused.value), start.path, "its weights do not fit", "of another shape")
