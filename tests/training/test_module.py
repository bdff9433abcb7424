import pytest
import torch

from hiersum.checkpoints.io import load_summarizer
from hiersum.config import DataConfig, ModelConfig, OptimConfig
from hiersum.data.batching import collate
from hiersum.data.schema import EncodedExample
from hiersum.data.tokenizer import train_tokenizer
from hiersum.training.module import HierSumModule, NoamSchedule, module_hparams

TINY = ModelConfig(d_model=16, heads=2, ff_size=32, encoder_layers=2, inter_layers=[1], inter_heads=2,
                   decoder_layers=1, dropout=0.0)


def test_noam_schedule_warms_up_linearly_then_decays_as_inverse_sqrt():
    schedule = NoamSchedule(lr=2.0, d_model=64, warmup_steps=100)
    peak = schedule(100)
    assert peak == pytest.approx(2.0 * 64**-0.5 * 100**-0.5)
    assert schedule(50) == pytest.approx(peak / 2)
    assert schedule(400) == pytest.approx(peak / 2)
    assert schedule(0) == schedule(1) > 0


@pytest.fixture()
def module_and_batch():
    tokenizer = train_tokenizer(["alpha beta gamma delta.", "beta gamma epsilon zeta."] * 10, vocab_size=60)
    hparams = module_hparams(TINY, OptimConfig(label_smoothing=0.0), DataConfig(path="x"), tokenizer)
    module = HierSumModule(**hparams)
    ids = tokenizer.encode_batch(["alpha beta", "gamma delta epsilon", "zeta"])
    examples = [
        EncodedExample(id="a", paragraphs=[ids[0], ids[1]], target=ids[2], references=["zeta"], provenance=[]),
        EncodedExample(id="b", paragraphs=[ids[2]], target=ids[0] + ids[2], references=["x"], provenance=[]),
    ]
    special = tokenizer.special
    return module, collate(examples, pad_id=special.pad, bos_id=special.bos, eos_id=special.eos)


def test_loss_is_mean_nll_over_real_target_tokens(module_and_batch):
    module, batch = module_and_batch
    loss, log_probs, n_tokens = module.loss(batch)
    assert n_tokens == int(batch.tgt_mask.sum())
    picked = log_probs.gather(-1, batch.tgt_out.unsqueeze(-1)).squeeze(-1)  # (B, S)
    assert loss.item() == pytest.approx(-(picked[batch.tgt_mask]).mean().item(), rel=1e-5)


def test_checkpoint_round_trip_rebuilds_model_and_tokenizer(module_and_batch, tmp_path):
    """A checkpoint of the LightningModule rebuilds the same network without Lightning."""
    module, batch = module_and_batch
    path = tmp_path / "m.ckpt"
    checkpoint = {"state_dict": module.state_dict(), "hyper_parameters": dict(module.hparams)}
    module.on_save_checkpoint(checkpoint)
    torch.save(checkpoint, path)
    restored = load_summarizer(path)
    assert not restored.model.training
    module.eval()
    torch.testing.assert_close(
        restored.model.log_probs(batch.src, batch.src_mask, batch.tgt_in),
        module.model.log_probs(batch.src, batch.src_mask, batch.tgt_in),
    )
    assert restored.tokenizer().special == module.tokenizer().special
    assert restored.data_config == DataConfig(path="x")


def test_load_checkpoint_errors_name_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.ckpt"):
        load_summarizer(tmp_path / "missing.ckpt")
    torch.save({"weights": torch.zeros(1)}, tmp_path / "foreign.ckpt")
    with pytest.raises(ValueError, match="foreign.ckpt"):
        load_summarizer(tmp_path / "foreign.ckpt")
