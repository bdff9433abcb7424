"""``model=pretrained`` in training: PreSumm's two parameter groups and schedules (``optim.pretrained_group``), frozen
layers left out of the optimizer, and self-contained checkpoints (loaded with the directory gone)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from hiersum.checkpoints.io import load_network, read_checkpoint
from hiersum.config import DataConfig, OptimConfig, ParameterGroupConfig
from hiersum.data.tokenizer import load_tokenizer
from hiersum.training.module import HierSumModule, module_hparams
from hiersum.training.schedule import NoamSchedule
from tests.helpers.pretrained import TEXTS, grid, make_tiny_bert, pretrained_config, target

PRESUMM_GROUP = ParameterGroupConfig(optimizer={"weight_decay": 0.01}, scheduler={"lr": 0.002, "warmup_steps": 20})


@pytest.fixture()
def bert_dir(tmp_path: Path) -> Path:
    return make_tiny_bert(tmp_path / "tiny_bert")


def pretrained_module(bert_dir: Path, optim: OptimConfig | None = None, *, device: torch.device | str = "cpu",
                      **model_changes) -> HierSumModule:
    tokenizer = load_tokenizer(bert_dir)
    torch.manual_seed(0)
    return HierSumModule(**module_hparams(pretrained_config(bert_dir, **model_changes), optim or OptimConfig(),
                                          DataConfig(path="x"), tokenizer)).to(device)


def presumm_optim() -> OptimConfig:
    scheduler = {"_target_": "hiersum.training.schedule.noam_scheduler", "_partial_": True, "lr": 0.2,
                 "warmup_steps": 10, "d_model": 1}
    return OptimConfig(scheduler=scheduler, pretrained_group=PRESUMM_GROUP)


def test_two_parameter_groups_with_their_own_schedules(bert_dir, device):
    module = pretrained_module(bert_dir, presumm_optim(), pretrained_frozen_layers=1, device=device)
    configured = module.configure_optimizers()
    optimizer, scheduler = configured["optimizer"], configured["lr_scheduler"]["scheduler"]
    new, pretrained = optimizer.param_groups
    pretrained_ids = {id(p) for p in module.model.encoder.pretrained.parameters() if p.requires_grad}
    assert {id(p) for p in pretrained["params"]} == pretrained_ids
    assert not pretrained_ids & {id(p) for p in new["params"]}
    frozen = [p for p in module.parameters() if not p.requires_grad]
    assert frozen and not {id(p) for p in frozen} & {id(p) for group in optimizer.param_groups for p in group["params"]}
    assert len(new["params"]) + len(pretrained["params"]) + len(frozen) == len(list(module.parameters()))
    assert (new["weight_decay"], pretrained["weight_decay"]) == (0.0, 0.01)
    expected = [NoamSchedule(lr=0.2, d_model=1, warmup_steps=10), NoamSchedule(lr=0.002, d_model=1, warmup_steps=20)]
    for update in range(1, 31):
        assert [group["lr"] for group in optimizer.param_groups] == pytest.approx(
            [schedule.factor(update) for schedule in expected])
        optimizer.step()
        scheduler.step()


def test_one_group_by_default_and_a_group_needs_pretrained_weights(bert_dir, device):
    (group,) = pretrained_module(bert_dir, device=device).configure_optimizers()["optimizer"].param_groups
    assert len(group["params"]) == len(list(pretrained_module(bert_dir).parameters()))
    from tests.helpers.training import module_and_batch

    scratch, _, _ = module_and_batch(optim=presumm_optim(), device=device)
    with pytest.raises(ValueError, match="optim.pretrained_group is set but model.encoder=hierarchical has no"):
        scratch.configure_optimizers()
    with pytest.raises(ValueError, match=r"optim.pretrained_group.scheduler replaces \['beta'\]"):
        OptimConfig(pretrained_group={"scheduler": {"beta": 1}})


def test_a_checkpoint_rebuilds_the_network_and_tokenizer_without_the_directory(bert_dir, tmp_path, device):
    module = pretrained_module(bert_dir, presumm_optim(), device=device).eval()
    with torch.no_grad():  # weights that differ from the directory's: the checkpoint's must be the ones loaded
        module.model.encoder.pretrained.get_input_embeddings().weight.mul_(1.5)
    path = tmp_path / "pretrained.ckpt"
    checkpoint = {"state_dict": module.state_dict(), "hyper_parameters": dict(module.hparams)}
    module.on_save_checkpoint(checkpoint)
    torch.save(checkpoint, path)
    shutil.rmtree(bert_dir)

    saved = read_checkpoint(path)  # weights_only=True
    assert '"model_type": "bert"' in saved["hyper_parameters"]["model"]["pretrained_config_json"]
    restored = load_network(path)
    assert restored.model.config.pretrained_encoder is None and restored.model.config.d_model == 32
    tokenizer = restored.tokenizer
    assert tokenizer.tokens == ("[PAD]", "[CLS]", "[SEP]")
    src, mask, tgt = (tensor.to(device) for tensor in (*grid(tokenizer, TEXTS), target(tokenizer)))
    with torch.no_grad():
        torch.testing.assert_close(restored.model.to(device)(src, mask, tgt).log_probs,
                                   module.model(src, mask, tgt).log_probs)
