"""Checkpoints of the LightningModule read without Lightning (hiersum.checkpoints.io.load_network)."""

import torch

from hiersum.checkpoints.io import load_network
from hiersum.config import DataConfig
from tests.helpers.training import module_and_batch


def test_checkpoint_round_trip_rebuilds_model_and_tokenizer(tmp_path, device):
    """A checkpoint of the LightningModule rebuilds the same network without Lightning."""
    module, batch, _ = module_and_batch(device=device)
    path = tmp_path / "m.ckpt"
    checkpoint = {"state_dict": module.state_dict(), "hyper_parameters": dict(module.hparams)}
    module.on_save_checkpoint(checkpoint)
    torch.save(checkpoint, path)
    restored = load_network(path)
    assert not restored.model.training
    restored.model.to(device)  # read on the CPU (map_location's default), compared on the module's device
    module.eval()
    torch.testing.assert_close(
        restored.model(batch.src, batch.src_mask, batch.tgt_in).log_probs,
        module.model(batch.src, batch.src_mask, batch.tgt_in).log_probs,
    )
    assert restored.tokenizer.special == module.tokenizer().special
    assert restored.data_config == DataConfig(path="x")
