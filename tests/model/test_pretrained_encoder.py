"""``model.encoder=pretrained``: a tiny random BERT saved as a local Hugging Face directory, as paragraph encoder."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import torch

from hiersum.commands.composed import command_config
from hiersum.config import ModelConfig, TokenizerConfig, TrainConfig
from hiersum.data.tokenizer import SubwordTokenizer, load_tokenizer
from hiersum.model.encoder_registry import encoder_spec, run_tokenizer_config, validate_choices
from hiersum.model.pretrained import PretrainedEncoder
from hiersum.model.summarizer import HierSum
from tests.helpers.padded import use_padded_grid
from tests.helpers.pretrained import (
    TEXTS,
    TINY_BERT_SIZES,
    VOCAB,
    grid,
    make_tiny_bert,
    network,
    pretrained_config,
    target,
)


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("pretrained") / "tiny_bert")


@pytest.fixture(scope="module")
def tokenizer(bert_dir: Path) -> SubwordTokenizer:
    return load_tokenizer(bert_dir)


def test_the_tokenizer_is_the_directorys_wordpiece_with_bert_special_tokens(bert_dir, tokenizer):
    assert (tokenizer.special.pad, tokenizer.special.bos, tokenizer.special.eos) == (
        VOCAB.index("[PAD]"), VOCAB.index("[CLS]"), VOCAB.index("[SEP]"))
    assert tokenizer.vocab_size == len(VOCAB)
    assert tokenizer.encode_batch(["a", "b c"]) == [[VOCAB.index("a")], [VOCAB.index("b"), VOCAB.index("c")]]  # the
    # directory's tokenizer.json pads to 16 and truncates, as sentence-transformers': hiersum turns both off
    ids = tokenizer.encode_batch(["Cats sat."])[0]
    assert tokenizer.decode([*ids, tokenizer.special.eos, *ids]) == "cats sat."
    restored = SubwordTokenizer.from_str(tokenizer.to_str())  # as a checkpoint carries it
    assert (restored.special, restored.tokens) == (tokenizer.special, ("[PAD]", "[CLS]", "[SEP]"))
    # a run's tokenizer (hiersum-train, hiersum-prepare): the encoder's own when tokenizer.path is null
    assert run_tokenizer_config(TokenizerConfig(), pretrained_config(bert_dir)).path == str(bert_dir)
    assert run_tokenizer_config(TokenizerConfig(path="own.json"), pretrained_config(bert_dir)).path == "own.json"
    assert run_tokenizer_config(TokenizerConfig(), ModelConfig()).path is None


def test_a_vocab_txt_directory_loads_as_a_fast_tokenizer(bert_dir, tokenizer, tmp_path):
    (tmp_path / "vocab.txt").write_text("".join(token + "\n" for token in VOCAB), encoding="utf-8")
    (tmp_path / "config.json").write_text((bert_dir / "config.json").read_text(), encoding="utf-8")
    slow = load_tokenizer(tmp_path)
    assert slow.special == tokenizer.special
    assert slow.encode_batch(["the cat sat."]) == tokenizer.encode_batch(["the cat sat."])


def test_the_config_is_completed_from_the_directory(bert_dir, tokenizer):
    spec = encoder_spec("pretrained")
    assert spec.cls is PretrainedEncoder and spec.inter_paragraph and spec.official_hier is None
    model = network(bert_dir, tokenizer)
    assert model.config.d_model == TINY_BERT_SIZES["hidden_size"] != ModelConfig().d_model
    encoder_config = json.loads(model.config.pretrained_config_json)
    assert (encoder_config["model_type"], encoder_config["hidden_size"]) == ("bert", 32)


def test_pretrained_weights_are_kept_and_the_decoder_embeddings_tied(bert_dir, tokenizer):
    from transformers import AutoModel

    reference = AutoModel.from_pretrained(str(bert_dir), local_files_only=True).state_dict()
    model = network(bert_dir, tokenizer)
    loaded = model.encoder.pretrained.state_dict()
    assert set(loaded) == {name for name in reference if not name.startswith("pooler.")}
    for name, tensor in loaded.items():
        torch.testing.assert_close(tensor, reference[name], rtol=0, atol=0, msg=name)
    word_embeddings = model.encoder.pretrained.get_input_embeddings().weight
    assert model.decoder.embeddings.weight is word_embeddings and model.generator.weight is word_embeddings
    assert {id(p) for p in model.pretrained_parameters()} == {id(p) for p in model.encoder.pretrained.parameters()}

    untied = network(bert_dir, tokenizer, tie_decoder_embeddings=False)
    assert untied.decoder.embeddings.weight is not untied.encoder.pretrained.get_input_embeddings().weight
    assert not torch.equal(untied.decoder.embeddings.weight, untied.encoder.pretrained.get_input_embeddings().weight)


def test_shapes(bert_dir, tokenizer):
    model = network(bert_dir, tokenizer, graph="similarity")
    src, mask = grid(tokenizer, TEXTS)
    B, P, T = src.shape
    graph = torch.rand(B, P, P)
    encoded = model.encode(src, mask, paragraph_graph=graph, return_attention=True)
    assert encoded.token_states.shape == (B, P, T, 32)
    real = mask.flatten(1).sum(-1)
    assert encoded.memory.shape == (B, int(real.max()), 32)
    assert encoded.memory_mask.sum(-1).tolist() == real.tolist()
    assert [w.shape for w in encoded.pooling_weights] == [(B, P, 2, T)]
    assert [a.shape for a in encoded.inter_attention] == [(B, 2, P, P)]
    tgt_in = target(tokenizer)
    log_probs = model(src, mask, tgt_in, paragraph_graph=graph).log_probs
    assert log_probs.shape == (B, tgt_in.size(1), len(VOCAB))
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(B, tgt_in.size(1)))


def test_padding_changes_nothing_and_real_tokens_do_matter(bert_dir, tokenizer):
    model = network(bert_dir, tokenizer)
    tgt_in = target(tokenizer)
    src, mask = grid(tokenizer, TEXTS)
    wide_src, wide_mask = grid(tokenizer, TEXTS, P=src.size(1) + 1, T=src.size(2) + 5)  # an empty paragraph, padding
    with torch.no_grad():
        reference = model.encode(src, mask)
        padded = model.encode(wide_src, wide_mask)
        torch.testing.assert_close(padded.memory, reference.memory)
        torch.testing.assert_close(model(wide_src, wide_mask, tgt_in).log_probs, model(src, mask, tgt_in).log_probs)
        changed = src.clone()
        changed[1, 1, 0] = tokenizer.encode_batch(["z"])[0][0]
        assert not torch.allclose(model(changed, mask, tgt_in).log_probs[1], model(src, mask, tgt_in).log_probs[1])


def test_the_new_layers_computed_on_real_tokens_equal_the_padded_grid(bert_dir, tokenizer):
    packed = network(bert_dir, tokenizer, inter_layers=[0], graph="similarity")  # eval: no dropout in BERT
    padded = use_padded_grid(network(bert_dir, tokenizer, inter_layers=[0], graph="similarity"))
    src, mask = grid(tokenizer, [TEXTS[0], ["investors cheered.", "", "markets rose sharply on monday."]], T=40)
    graph = torch.rand(2, src.size(1), src.size(1))
    tgt_in = target(tokenizer)
    real_tgt = tgt_in.ne(tokenizer.special.pad)
    results = []
    for model in (packed, padded):
        out = model(src, mask, tgt_in, paragraph_graph=graph, return_attention=True)
        encoded, log_probs = out.encoded, out.log_probs[real_tgt]
        model.zero_grad()
        log_probs.max(-1).values.sum().backward()
        gradients = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
        results.append((encoded, log_probs, gradients))
    (got, got_log_probs, got_gradients), (expected, expected_log_probs, expected_gradients) = results
    torch.testing.assert_close(got.memory, expected.memory, atol=1e-5, rtol=0)
    torch.testing.assert_close(got.token_states[mask], expected.token_states[mask], atol=1e-5, rtol=0)
    torch.testing.assert_close(got.pooling_weights[0], expected.pooling_weights[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(got_log_probs, expected_log_probs, atol=1e-5, rtol=0)
    assert got_gradients.keys() == expected_gradients.keys()
    for name, gradient in expected_gradients.items():
        if gradient.norm() > 1e-6:  # (biases before a softmax get none)
            assert (got_gradients[name] - gradient).norm() / gradient.norm() <= 1e-4, name


def test_paragraphs_longer_than_the_position_table_are_cut_and_counted(tmp_path, caplog):
    short_dir = make_tiny_bert(tmp_path / "bert16", max_position_embeddings=16)
    tokenizer = load_tokenizer(short_dir)
    model = network(short_dir, tokenizer)
    texts = [["one two three four five six seven", "ab"], ["abc"]]  # 31 characters, 2, 3
    src, mask = grid(tokenizer, texts)
    with caplog.at_level(logging.WARNING, logger="hiersum.model.pretrained"), torch.no_grad():
        encoded = model.encode(src, mask)
    assert src.size(2) > 16 and encoded.token_states.shape[2] == 14  # [CLS] and [SEP] take two positions
    assert model.encoder.paragraphs_cut == 1
    assert encoded.memory_mask.sum(-1).tolist() == [14 + 2, 3]
    assert "cut 1 paragraphs to the 14 tokens the pretrained encoder's position table holds (1 so far)" in caplog.text
    unwrapped = network(short_dir, tokenizer, pretrained_wrap_ids=[])
    assert unwrapped.encode(src, mask).token_states.shape[2] == 16


def test_copy_attention_copies_the_kept_tokens_of_cut_paragraphs(tmp_path):
    """``model.copy_attention``: the memory's ids are the tokens the encoder kept (a cut paragraph's first 14), in
    the memory's order; the mixture is a distribution."""
    short_dir = make_tiny_bert(tmp_path / "bert16", max_position_embeddings=16)
    tokenizer = load_tokenizer(short_dir)
    model = network(short_dir, tokenizer, copy_attention=True)
    src, mask = grid(tokenizer, [["one two three four five six seven", "ab"], ["abc"]])
    with torch.no_grad():
        encoded = model.encode(src, mask)
        log_probs = model(src, mask, target(tokenizer)).log_probs
    kept = mask.clone()
    kept[..., 14:] = False
    for b in range(2):
        assert torch.equal(encoded.memory_ids[b][encoded.memory_mask[b]], src[b][kept[b]])
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(log_probs.shape[:2]))


def test_each_paragraph_is_encoded_alone_wrapped_in_cls_and_sep(bert_dir, tokenizer):
    from transformers import AutoModel

    reference = AutoModel.from_pretrained(str(bert_dir), local_files_only=True).eval()
    model = network(bert_dir, tokenizer)
    assert model.config.pretrained_wrap_ids == [VOCAB.index("[CLS]"), VOCAB.index("[SEP]")]
    unwrapped = network(bert_dir, tokenizer, pretrained_wrap_ids=[])
    src, mask = grid(tokenizer, TEXTS)
    with torch.no_grad():
        states = model.encoder.encode_paragraphs(src, mask)  # (B, P, T, D)
        plain = unwrapped.encoder.encode_paragraphs(src, mask)
        for b, p in [(0, 0), (0, 2), (1, 1)]:
            ids = src[b, p][mask[b, p]]
            wrapped = torch.cat([torch.tensor([VOCAB.index("[CLS]")]), ids, torch.tensor([VOCAB.index("[SEP]")])])
            expected = reference(input_ids=wrapped.unsqueeze(0)).last_hidden_state[0, 1:-1]
            torch.testing.assert_close(states[b, p, : len(ids)], expected, rtol=1e-4, atol=1e-5)
            alone = reference(input_ids=ids.unsqueeze(0)).last_hidden_state[0]
            torch.testing.assert_close(plain[b, p, : len(ids)], alone, rtol=1e-4, atol=1e-5)
        assert not states[1, 2].any()  # the empty paragraph


def test_the_lowest_layers_can_be_frozen(bert_dir, tokenizer):
    model = network(bert_dir, tokenizer, pretrained_frozen_layers=1)
    layers = model.encoder.pretrained.encoder.layer
    assert not any(p.requires_grad for p in layers[0].parameters())
    assert all(p.requires_grad for p in layers[1].parameters())
    assert model.encoder.pretrained.get_input_embeddings().weight.requires_grad
    with pytest.raises(ValueError, match="pretrained_frozen_layers=3 exceeds the encoder's 2 layers"):
        network(bert_dir, tokenizer, pretrained_frozen_layers=3)


def test_a_fully_frozen_encoder_is_a_fixed_feature_extractor(bert_dir, tokenizer):
    torch.manual_seed(0)
    built = HierSum(pretrained_config(bert_dir, pretrained_frozen_layers=2, pretrained_frozen_embeddings=True),
                    vocab_size=len(VOCAB), pad_id=0, bos_id=2, eos_id=3)
    assert built.training and not built.encoder.pretrained.training  # eval from the start: Lightning calls no train()
    model = network(bert_dir, tokenizer, pretrained_frozen_layers=2, pretrained_frozen_embeddings=True,
                    tie_decoder_embeddings=False).train()
    assert not any(p.requires_grad for p in model.encoder.pretrained.parameters())
    assert model.decoder.embeddings.weight.requires_grad  # the decoder's own table trains
    assert not model.encoder.pretrained.training and model.encoder.layers.training  # no dropout in the frozen part
    src, mask = grid(tokenizer, TEXTS)
    torch.testing.assert_close(model.encoder.encode_paragraphs(src, mask), model.encoder.encode_paragraphs(src, mask))
    partly = network(bert_dir, tokenizer, pretrained_frozen_layers=1, pretrained_frozen_embeddings=True).train()
    assert not partly.encoder.pretrained.get_input_embeddings().weight.requires_grad
    assert partly.encoder.pretrained.training  # layer 2 still trains, with dropout


def test_cached_paragraph_states_equal_computed_ones_and_are_computed_once(bert_dir, tokenizer):
    frozen = {"pretrained_frozen_layers": 2, "pretrained_frozen_embeddings": True, "tie_decoder_embeddings": False}
    cached = network(bert_dir, tokenizer, **frozen, pretrained_cache_states=True).train()
    plain = network(bert_dir, tokenizer, **frozen).train()
    plain.load_state_dict(cached.state_dict())
    calls = []
    cached.encoder.pretrained.register_forward_hook(
        lambda module, args, kwargs, output: calls.append(kwargs["input_ids"].size(0)), with_kwargs=True
    )  # calls: the paragraphs of each call
    src, mask = grid(tokenizer, TEXTS)
    tgt_in = target(tokenizer)
    first = cached(src, mask, tgt_in).log_probs
    assert calls == [5] and cached.encoder.state_cache.misses == 5  # five distinct paragraphs
    torch.testing.assert_close(first, plain(src, mask, tgt_in).log_probs, rtol=1e-5, atol=1e-6)
    wide_src, wide_mask = grid(tokenizer, TEXTS[::-1], P=4, T=src.size(2) + 3)  # the same paragraphs, moved
    again = cached(wide_src, wide_mask, tgt_in.flip(0)).log_probs
    assert calls == [5] and cached.encoder.state_cache.hits == 5  # nothing encoded again
    torch.testing.assert_close(again, plain(wide_src, wide_mask, tgt_in.flip(0)).log_probs, rtol=1e-5, atol=1e-6)
    first.logsumexp(-1).sum().backward()
    assert cached.encoder.layers[0].feed_forward.w_in.weight.grad is not None  # the new layers still learn

    new_src, new_mask = grid(tokenizer, [["the cat sat on the mat.", "snow fell.", "snow fell."]])
    cached.encode(new_src, new_mask)
    assert calls == [5, 1] and cached.encoder.state_cache.misses == 6  # only the new paragraph, once


def test_the_decoder_table_can_start_as_a_copy_of_the_word_embeddings(bert_dir, tokenizer):
    model = network(bert_dir, tokenizer, tie_decoder_embeddings=False, copy_decoder_embeddings=True)
    word_embeddings = model.encoder.pretrained.get_input_embeddings().weight
    assert model.decoder.embeddings.weight is not word_embeddings
    torch.testing.assert_close(model.decoder.embeddings.weight, word_embeddings, rtol=0, atol=0)
    assert model.generator.weight is model.decoder.embeddings.weight
    assert id(model.decoder.embeddings.weight) not in {id(p) for p in model.pretrained_parameters()}


def test_caching_or_copying_without_their_preconditions_is_refused(bert_dir, tokenizer):
    with pytest.raises(ValueError, match="pretrained_cache_states=true needs a fully frozen encoder"):
        pretrained_config(bert_dir, pretrained_cache_states=True)
    with pytest.raises(ValueError, match="pretrained_cache_states=true needs every layer frozen: "
                                         "model.pretrained_frozen_layers=1, the encoder has 2"):
        network(bert_dir, tokenizer, pretrained_frozen_layers=1, pretrained_frozen_embeddings=True,
                pretrained_cache_states=True)
    with pytest.raises(ValueError, match="copy_decoder_embeddings=true gives the decoder a table of its own"):
        pretrained_config(bert_dir, copy_decoder_embeddings=True)


def test_a_missing_directory_is_refused_in_one_line(tiny_cfg, tmp_path):
    with pytest.raises(ValueError, match=r"^model.encoder=pretrained needs model.pretrained_encoder="):
        HierSum(pretrained_config(tmp_path, pretrained_encoder=None), vocab_size=10, pad_id=0, bos_id=1, eos_id=2)
    cfg = tiny_cfg("model=pretrained", f"model.pretrained_encoder={tmp_path / 'absent'}")
    with pytest.raises(ValueError, match=r"model.pretrained_encoder=.*absent: expected a local Hugging Face model"):
        validate_choices(command_config(cfg, TrainConfig, usage="test"))


def test_a_tokenizer_that_does_not_fit_the_encoder_is_refused(bert_dir):
    with pytest.raises(ValueError, match="tie_decoder_embeddings=true needs the tokenizer's 50 tokens"):
        HierSum(pretrained_config(bert_dir), vocab_size=50, pad_id=0, bos_id=2, eos_id=3)
    with pytest.raises(ValueError, match="the tokenizer has 500 tokens"):
        HierSum(pretrained_config(bert_dir, tie_decoder_embeddings=False), vocab_size=500, pad_id=0, bos_id=2, eos_id=3)
