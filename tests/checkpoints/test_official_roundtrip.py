"""The importer on official checkpoints of other sizes: a random HierSum is written in the official
format (inverse key mapping, position buffers, causal masks, old LayerNorm names), imported back and
must compute exactly the same, on the tests' ``device`` (both models on it: the same kernels on the same weights, so
no tolerance); and the converted hiersum checkpoint loads like a trained one."""

from __future__ import annotations

import argparse

import pytest
import torch
from torch.testing import assert_close

from hiersum.checkpoints.io import load_network, read_checkpoint
from hiersum.checkpoints.official import (
    hiersum_checkpoint,
    hiersum_from_official,
    load_official_hiersumm,
    official_checkpoint,
)
from hiersum.cli.import_hiersumm import main as import_main
from hiersum.config import ModelConfig
from hiersum.decoding.generation import GenerationOptions, generate
from hiersum.model import HierSum
from tests.helpers.device import same_result
from tests.helpers.model import BOS, EOS, PAD, VOCAB
from tests.helpers.paths import SHARED_DIR

OTHER_SIZES = {
    # d, heads and inter heads differ, inter layers not at the end, more decoder layers than the fixture
    "hierarchical": dict(d_model=24, heads=3, ff_size=40, encoder_layers=5, inter_layers=[0, 3], inter_heads=6,
                         decoder_layers=3),
    "flat": dict(d_model=20, heads=5, ff_size=28, encoder_layers=3, inter_layers=[], inter_heads=5,
                 decoder_layers=1, encoder="flat", flat_max_tokens=40),
}


def random_model(name: str, seed: int = 3) -> HierSum:
    torch.manual_seed(seed)
    config = ModelConfig(**OTHER_SIZES[name], dropout=0.0, max_positions=48)
    model = HierSum(config, vocab_size=VOCAB, pad_id=PAD, bos_id=BOS, eos_id=EOS).eval()
    with torch.no_grad():  # non-trivial LayerNorm and bias values, so a wrong mapping shows
        for parameter in model.parameters():
            if parameter.dim() == 1:
                parameter.add_(0.1 * torch.randn_like(parameter))
    return model


def inputs(name: str, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(src [2, 3, 5] or [2, 9] with padding, its mask, tgt [2, 6]) for the model ``name``, on ``device``."""
    generator = torch.Generator().manual_seed(0)
    if name == "flat":
        src = torch.randint(7, VOCAB, (2, 9), generator=generator)
        src[1, 5:] = PAD
    else:
        src = torch.randint(7, VOCAB, (2, 3, 5), generator=generator)
        src[0, 1, 2:] = PAD
        src[1, 2] = PAD
    tgt = torch.randint(7, VOCAB, (2, 6), generator=generator)
    tgt[:, 0] = BOS
    src, tgt = src.to(device), tgt.to(device)
    return src, src.ne(PAD), tgt


def assert_same_model(imported: HierSum, original: HierSum, name: str, device: torch.device) -> None:
    """Both models (moved to ``device``) encode, score and beam-search the same inputs identically."""
    imported, original = imported.to(device), original.to(device)
    src, mask, tgt = inputs(name, device)
    assert imported.config == original.config
    same = same_result(device)
    with torch.no_grad():
        assert_close(imported.encode(src, mask).token_states, original.encode(src, mask).token_states, **same)
        assert_close(imported(src, mask, tgt).log_probs, original(src, mask, tgt).log_probs, **same)
    options = GenerationOptions.official(beam_size=3, alpha=0.4, min_length=2, max_length=8, stopping="official")
    assert generate(imported, src, mask, options).sequences == generate(original, src, mask, options).sequences


@pytest.mark.parametrize("name", sorted(OTHER_SIZES))
def test_official_checkpoint_of_another_size_round_trips(name, tmp_path, device):
    original = random_model(name)
    checkpoint = official_checkpoint(original, old_layer_norm_names=True, decoder_masks=True)
    assert any(key.endswith(".a_2") for key in checkpoint["model"])
    assert "decoder.transformer_layers.0.mask" in checkpoint["model"]
    assert checkpoint["model"]["generator.0.weight"] is not checkpoint["model"]["encoder.embeddings.weight"]
    torch.save(checkpoint, tmp_path / "official.pt")
    imported = load_official_hiersumm(tmp_path / "official.pt")
    assert not imported.training
    assert_same_model(imported, original, name, device)


def test_heads_come_from_opt_not_from_shapes(device):
    """Head counts are invisible in the weights: importing with other heads gives another model."""
    original = random_model("hierarchical")
    checkpoint = official_checkpoint(original)
    checkpoint["opt"].heads = 6
    changed = hiersum_from_official(checkpoint).to(device)
    original.to(device)
    assert changed.config.heads == 6
    src, mask, tgt = inputs("hierarchical", device)
    with torch.no_grad():
        assert not torch.allclose(changed(src, mask, tgt).log_probs, original(src, mask, tgt).log_probs)


def test_inter_layers_of_opt_must_match_the_weights():
    checkpoint = official_checkpoint(random_model("hierarchical"))
    checkpoint["opt"].inter_layers = [3, 4]
    with pytest.raises(ValueError, match="pools in layers"):
        hiersum_from_official(checkpoint)


@pytest.mark.parametrize("name", sorted(OTHER_SIZES))
def test_import_cli_writes_a_hiersum_checkpoint_that_load_network_reads(name, tmp_path, capsys, device):
    original = random_model(name)
    checkpoint = official_checkpoint(original)
    checkpoint["opt"] = argparse.Namespace(**vars(checkpoint["opt"]), lr=3.0, warmup_steps=8000, beta1=0.9,
                                           beta2=0.998, label_smoothing=0.1, trunc_src_nblock=24)
    torch.save(checkpoint, tmp_path / "official.pt")
    import_main(["--checkpoint", str(tmp_path / "official.pt"), "--output", str(tmp_path / "model.ckpt")])
    assert "model.ckpt" in capsys.readouterr().out
    summarizer = load_network(tmp_path / "model.ckpt")
    assert_same_model(summarizer.model, original, name, device)
    optim = read_checkpoint(tmp_path / "model.ckpt")["hyper_parameters"]["optim"]
    assert optim["scheduler"]["warmup_steps"] == 8000 and optim["scheduler"]["lr"] == 3.0
    assert summarizer.data_config.format == "wikisum"
    assert (summarizer.data_config.max_paragraphs, summarizer.data_config.eval_max_paragraphs) == (24, 40)
    assert summarizer.tokenizer_json is None
    with pytest.raises(ValueError, match="hiersum import-hiersumm --tokenizer"):
        summarizer.tokenizer  # noqa: B018  (parsed here)


def test_import_cli_reports_a_bad_checkpoint(tmp_path, capsys):
    torch.save({"weights": torch.zeros(1)}, tmp_path / "bad.pt")
    with pytest.raises(SystemExit) as exit_info:
        import_main(["--checkpoint", str(tmp_path / "bad.pt"), "--output", str(tmp_path / "out.ckpt")])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "bad.pt" in error and error.startswith("hiersum-import-hiersumm: error: ") and error.count("\n") == 1


def test_a_tokenizer_that_does_not_fit_is_refused():
    from hiersum.data.tokenizer import train_tokenizer

    tokenizer = train_tokenizer(["alpha beta gamma"] * 5, vocab_size=40)
    model = random_model("flat")
    with pytest.raises(ValueError, match="does not match"):
        hiersum_checkpoint(model, argparse.Namespace(), tokenizer=tokenizer)


SPM = SHARED_DIR / "reference" / "hiersumm" / "spm9998_3.model"


@pytest.mark.skipif(not SPM.is_file(), reason="official SentencePiece model not found")
def test_imported_checkpoint_with_the_official_tokenizer_summarizes_text(tmp_path, device):
    """A (tiny, random) official model over the real 32000-piece vocabulary, imported with --tokenizer:
    the checkpoint carries the SentencePiece tokenizer and decodes text like a trained one."""
    pytest.importorskip("google.protobuf")
    from hiersum.config import DataConfig, DecodeConfig
    from hiersum.data.schema import Example
    from hiersum.data.selection import encode_examples, encoding_config
    from hiersum.inference.batched import summarize_encoded

    torch.manual_seed(0)
    config = ModelConfig(d_model=8, heads=2, ff_size=8, encoder_layers=2, inter_layers=[1], inter_heads=2,
                         decoder_layers=1, dropout=0.0, max_positions=64)
    model = HierSum(config, vocab_size=32000, pad_id=6, bos_id=4, eos_id=5).eval()
    torch.save(official_checkpoint(model), tmp_path / "official.pt")
    import_main(["--checkpoint", str(tmp_path / "official.pt"), "--output", str(tmp_path / "m.ckpt"),
                 "--tokenizer", str(SPM)])
    summarizer = load_network(tmp_path / "m.ckpt")
    tokenizer = summarizer.tokenizer
    special = tokenizer.special
    assert (special.pad, special.bos, special.eos, tokenizer.vocab_size) == (6, 4, 5, 32000)
    example = Example(id="e", title="", documents=[["the school was founded in 1987 .", "it has 300 pupils ."]],
                      references=["a school ."])
    selection = encoding_config(DataConfig(path="", max_paragraphs=4, max_paragraph_tokens=16, title_paragraph=False))
    encoded = encode_examples([example], tokenizer, selection)
    decode = DecodeConfig(beam_size=2, alpha=0.0, min_length=3, max_length=6)
    [(indices, summaries)] = list(summarize_encoded(summarizer.model, encoded, tokenizer, decode, batch_tokens=512,
                                                         device=device))
    assert indices == [0] and isinstance(summaries[0].summary, str) and summaries[0].summary
