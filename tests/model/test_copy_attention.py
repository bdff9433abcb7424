"""Copy attention (``model.copy_attention``, :mod:`hiersum.model.copy_attention`): the memory's token ids align with
the memory, the mixture is a distribution with no copy mass on padding, its formula holds, it is off by default
(no parameter, the same state_dict keys), and a tiny model learns a copy task with it that it does not learn
without it in the same steps. (Cached == uncached, teacher forcing == steps, beam reordering and the compiled step
with copy on: tests/model/test_decoder.py and tests/decoding/, parametrized.)"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from hiersum.checkpoints.io import network_from_hparams
from hiersum.config import ModelConfig, config_dict
from hiersum.decoding.generation import GenerationOptions, generate
from hiersum.model import HierSum
from hiersum.model.copy_attention import CopyAttention
from hiersum.training.loss import teacher_forced_nll
from tests.helpers.copy_task import COPY_K, COPY_VOCAB, copy_task_batch, train_on_copy_task
from tests.helpers.model import (
    BOS,
    COVERAGE_WEIGHT,
    EOS,
    PAD,
    VOCAB,
    make_batch,
    make_flat_batch,
    make_model,
    stepped_log_probs,
    tiny_config,
)

FLAT = {"encoder": "flat", "inter_layers": []}


def model_and_batch(encoder: str, device: torch.device, **changes):
    """A tiny copy model of ``encoder`` and its ragged batch (empty paragraphs, padded tokens and targets)."""
    flat = encoder == "flat"
    model = make_model(copy_attention=True, device=device, **(FLAT if flat else {}), **changes)
    return model, (make_flat_batch if flat else make_batch)(device=device)


@pytest.mark.parametrize("encoder", ["hierarchical", "flat"])
def test_the_memory_ids_are_the_tokens_of_the_memory(encoder, device):
    model, (src, mask, _) = model_and_batch(encoder, device)
    with torch.no_grad():
        encoded = model.encode(src, mask)
    assert encoded.memory_ids.shape == encoded.memory_mask.shape
    for b in range(src.size(0)):
        real = encoded.memory_mask[b]
        assert torch.equal(encoded.memory_ids[b][real], src[b][mask[b]])  # grid order, padding left out
        assert torch.equal(encoded.memory[b][real], encoded.token_states[b][mask[b]])  # the same order as the states


@pytest.mark.parametrize("encoder", ["hierarchical", "flat"])
def test_the_mixture_is_a_distribution_with_no_copy_mass_on_padding(encoder, device):
    model, (src, mask, tgt) = model_and_batch(encoder, device)
    with torch.no_grad():
        out = model(src, mask, tgt)
        steps, _ = stepped_log_probs(model, tgt, model.init_decoder_state(model.encode(src, mask)))
    ones = torch.ones(tgt.shape, device=device)
    assert_close(out.log_probs.exp().sum(-1), ones)  # teacher forced
    assert_close(steps.exp().sum(-1), ones)  # step by step
    assert_close(steps, out.log_probs, atol=1e-5, rtol=0)  # the same mixture
    assert torch.equal(out.log_probs, out.copy.log_probs())  # the next-token distribution is the mixture
    assert_close(out.logits.log_softmax(-1).exp().sum(-1), ones)  # the logits are the generator's own scores
    assert not torch.allclose(out.logits.log_softmax(-1), out.log_probs)
    attention, memory_mask = out.copy.attention, out.encoded.memory_mask  # (B, S, M), (B, M)
    assert not memory_mask.all()  # the guard: there is padding in the memory
    assert torch.all(attention.masked_select(~memory_mask.unsqueeze(1)) == 0)
    assert_close(attention.sum(-1), ones)
    assert ((out.copy.generate_probability > 0) & (out.copy.generate_probability < 1)).all()


def test_the_mixture_is_p_gen_times_the_vocabulary_plus_the_scattered_copy_attention(device):
    model, (src, mask, tgt) = model_and_batch("hierarchical", device)
    with torch.no_grad():
        out = model(src, mask, tgt)
        encoded = model.encode(src, mask)
        states = model.decoder(tgt, model.init_decoder_state(encoded, cache_capacity=None).decoder).states  # (B, S, D)
        vocabulary = F.softmax(model.output_logits(states), -1)  # (B, S, V)
    B, S, M = out.copy.attention.shape
    copied = torch.zeros(B, S, VOCAB, device=device)
    for b in range(B):
        for i in range(M):
            copied[b, :, encoded.memory_ids[b, i]] += out.copy.attention[b, :, i]
    p_gen = out.copy.generate_probability.unsqueeze(-1)  # (B, S, 1)
    assert_close(out.log_probs.exp(), p_gen * vocabulary + (1 - p_gen) * copied)


@pytest.mark.parametrize("encoder", ["hierarchical", "flat"])
def test_special_tokens_in_the_memory_are_never_copy_targets(encoder, device):
    """BOS and EOS among the real source tokens (a flat source ends with EOS) get no copy attention, teacher forced or
    step by step; the other real tokens share all of it."""
    model, (src, mask, tgt) = model_and_batch(encoder, device)
    src = src.clone()
    real = mask.flatten(1).nonzero()  # (n, 2): (example, position) of every real token
    flat_src = src.view(src.size(0), -1)
    for (b, i), token in zip(real[::3].tolist(), [EOS, BOS] * len(real), strict=False):
        flat_src[b, i] = token
    with torch.no_grad():
        out = model(src, mask, tgt)
        state = model.init_decoder_state(model.encode(src, mask))
        steps = [model.copy_output(*stepped(model, tgt[:, :t + 1], state)).attention for t in range(tgt.size(1))]
    ids, memory_mask = out.encoded.memory_ids, out.encoded.memory_mask  # (B, M)
    special = memory_mask & (ids.eq(EOS) | ids.eq(BOS))  # (B, M)
    assert special.any() and (memory_mask & ~special).any(1).all()  # the guard: both kinds in every example
    for attention in (out.copy.attention, torch.cat(steps, 1)):  # (B, S, M)
        assert torch.all(attention.masked_select(special.unsqueeze(1)) == 0)
        assert_close(attention.sum(-1), torch.ones(tgt.shape, device=device))


def test_the_paragraph_separator_of_a_flat_source_is_never_a_copy_target_and_checkpoints_record_it(device):
    """A flat source joins paragraphs with the tokenizer's ``<p>`` (``separator_id``), which gets no copy attention;
    a checkpoint's hyper-parameters carry the id (``module_hparams``), and those of earlier versions, without it,
    rebuild the network that excludes padding, BOS and EOS only."""
    separator = 3
    src, mask, tgt = make_flat_batch(device=device)
    src = src.clone()
    src[:, 2] = separator  # (B, L): a separator among the real tokens of every example
    config = tiny_config(copy_attention=True, **FLAT)
    torch.manual_seed(0)
    model = HierSum(config, vocab_size=VOCAB, pad_id=PAD, bos_id=BOS, eos_id=EOS, separator_id=separator).to(device)
    with torch.no_grad():
        attention = model.eval()(src, mask, tgt).copy.attention  # (B, S, M)
    assert torch.all(attention[:, :, 2] == 0) and torch.all(attention[:, :, :2] > 0)
    hparams = {"model": config_dict(config), "vocab_size": VOCAB, "pad_id": PAD, "bos_id": BOS, "eos_id": EOS}
    assert separator in network_from_hparams({**hparams, "separator_id": separator}).copy_attention.excluded_ids
    assert network_from_hparams(hparams).copy_attention.excluded_ids.tolist() == sorted({PAD, BOS, EOS})


def stepped(model: HierSum, prefix: torch.Tensor, state):
    """The arguments of ``model.copy_output`` for the last token of ``prefix`` [B, t] fed from ``state`` (uncached:
    the decoder over the whole prefix), for the step-by-step copy attention."""
    states = model.decoder(prefix, replace(state.decoder, self_attn=None)).states[:, -1:]  # (B, 1, D)
    return states, prefix[:, -1:], state, model.output_logits(states)


def test_the_copy_loss_smooths_the_generator_only(device):
    """The smoothed copy loss is (1 - e) x the mixture's NLL + e x the generator's uniform cross-entropy: the switch
    and the copy attention get the gradient of the NLL alone, and smoothing 0 is the mixture's NLL."""
    model, (src, mask, tgt) = model_and_batch("hierarchical", device)
    labels = torch.cat([tgt[:, 1:], torch.full_like(tgt[:, :1], EOS)], 1).masked_fill(tgt.eq(PAD), -100)
    out = model(src, mask, tgt)
    real = labels.ne(-100)
    nll = -out.log_probs.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)[real].mean()
    assert_close(teacher_forced_nll(out, labels, 0.0), nll)
    uniform = -out.logits.log_softmax(-1).mean(-1)[real].mean()
    smoothed = teacher_forced_nll(out, labels, 0.1)
    assert_close(smoothed, 0.9 * nll + 0.1 * uniform)
    switch = model.copy_attention.switch.weight
    (grad_smoothed,) = torch.autograd.grad(smoothed, switch, retain_graph=True)
    (grad_nll,) = torch.autograd.grad(0.9 * nll, switch)
    assert grad_nll.abs().sum() > 0  # the guard: the switch has a gradient at all
    assert_close(grad_smoothed, grad_nll)


def test_the_label_probability_is_the_mixtures_without_building_it():
    """``label_log_probs`` (what the training loss reads) equals the whole mixture's entry at the label, for beams
    sharing a memory entry (N = B' x G) and labels found in the memory or not."""
    torch.manual_seed(0)
    attention = CopyAttention(8, excluded_ids=(PAD,))
    memory, ids = torch.randn(2, 5, 8), torch.tensor([[9, 11, 9, 12, 13], [12, 13, PAD, 14, 9]])  # (B', M)
    copy = attention.init_memory(memory, ids, torch.ones(2, 5, dtype=torch.bool))
    states, inputs, logits = torch.randn(6, 4, 8), torch.randn(6, 4, 8), torch.randn(6, 4, 16)  # G = 3 beams, L = 4
    out = attention(states, inputs, logits, copy)
    labels = torch.randint(7, 16, (6, 4))  # (N, L)
    labels[:, 0] = 9  # in both memory entries, twice in the first
    expected = out.log_probs().gather(-1, labels.unsqueeze(-1)).squeeze(-1)  # (N, L)
    generated = logits.log_softmax(-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)  # (N, L) log q(label)
    assert_close(out.label_log_probs(labels, generated), expected)
    assert torch.all(out.attention[3:, :, 2] == 0)  # entry 1's PAD (excluded) gets no copy attention


@pytest.mark.parametrize("copy", [False, True], ids=["plain", "copy"])
def test_padding_and_bos_are_never_generated(copy, device):
    """A model whose output layer puts nearly all its mass on padding and BOS still writes neither, beam or
    greedy, with copying or without."""
    model = make_model(seed=3, copy_attention=copy, device=device)
    with torch.no_grad():
        model.generator.bias[PAD] += 50.0
        model.generator.bias[BOS] += 50.0
    src, mask, _ = make_batch(device=device)
    for options in (GenerationOptions(beam_size=3, max_length=8, min_length=2), GenerationOptions(greedy=True,
                                                                                              max_length=8)):
        out = generate(model.eval(), src, mask, options)
        tokens = {token for hypotheses in out.n_best for h in hypotheses for token in h.tokens}
        assert tokens and not tokens & {PAD, BOS}, tokens


@pytest.mark.parametrize("bias", [40.0, -40.0], ids=["generate", "copy"])
def test_the_switch_chooses_between_the_output_layer_and_the_source(bias, device):
    """p_gen = 1: the plain model's distribution (same weights); p_gen = 0: mass only on the example's source tokens."""
    plain = make_model(seed=3, device=device)
    model = make_model(seed=3, copy_attention=True, device=device)
    missing = model.load_state_dict(plain.state_dict(), strict=False).missing_keys
    assert missing and all(key.startswith("copy_attention.") for key in missing)
    src, mask, tgt = make_batch(device=device)
    with torch.no_grad():
        model.copy_attention.switch.weight.zero_()
        model.copy_attention.switch.bias.fill_(bias)
        log_probs = model(src, mask, tgt).log_probs
        if bias > 0:
            assert_close(log_probs, plain(src, mask, tgt).log_probs, atol=1e-5, rtol=0)
            return
    for b in range(src.size(0)):
        outside = torch.ones(VOCAB, dtype=torch.bool, device=device)
        outside[src[b][mask[b]]] = False
        assert log_probs[b][:, outside].exp().sum(-1).max() < 1e-6


def test_a_default_model_has_no_copy_parameters_and_old_configs_build_it():
    default, off, on = make_model(), make_model(copy_attention=False), make_model(copy_attention=True)
    assert ModelConfig().copy_attention is False and default.copy_attention is None
    assert list(default.state_dict()) == list(off.state_dict())
    assert not any("copy" in key for key in default.state_dict())
    assert set(on.state_dict()) - set(default.state_dict()) == {
        f"copy_attention.{layer}.{kind}" for layer in ("query", "key", "switch") for kind in ("weight", "bias")}
    src, mask, tgt = make_batch()
    with torch.no_grad():
        assert default.init_decoder_state(default.encode(src, mask)).copy is None
        assert default(src, mask, tgt).copy is None
    # a checkpoint's model hyper-parameters from before the option: the network without copy attention
    saved = {key: value for key, value in config_dict(default.config).items() if key != "copy_attention"}
    hparams = {"model": saved, "vocab_size": VOCAB, "pad_id": PAD, "bos_id": BOS, "eos_id": EOS}
    rebuilt = network_from_hparams(hparams)
    assert rebuilt.copy_attention is None and list(rebuilt.state_dict()) == list(default.state_dict())


def test_coverage_raises_each_position_by_what_earlier_ones_attended_and_its_loss_is_their_overlap(device):
    """With ``model.coverage`` position t's copy attention is the softmax of its scores plus w_c x the attention of
    positions < t, and the coverage loss sum_i min(a_ti, c_ti); w_c = 0 gives the attention without coverage."""
    model, (src, mask, tgt) = model_and_batch("hierarchical", device, coverage=True)
    with torch.no_grad():
        out = model(src, mask, tgt)
        plain = make_model(copy_attention=True, device=device)  # the same weights (seed 0) without coverage
        base = plain(src, mask, tgt).copy.attention  # (B, S, M): no coverage term
        model.copy_attention.coverage_weight.zero_()
        assert_close(model(src, mask, tgt).copy.attention, base)
    attention = out.copy.attention  # (B, S, M)
    coverage = attention.cumsum(1) - attention  # (B, S, M) attention of the earlier positions
    memory_mask = out.encoded.memory_mask.unsqueeze(1)  # (B, 1, M)
    scores = base.clamp(min=1e-30).log() + COVERAGE_WEIGHT * coverage  # softmax is shift-invariant per row
    expected = scores.masked_fill(~memory_mask, float("-inf")).softmax(-1).masked_fill(~memory_mask, 0.0)
    assert_close(attention, expected, atol=1e-5, rtol=1e-4)
    assert not torch.allclose(attention, base, atol=1e-3)  # the guard: coverage changed the attention
    assert_close(out.copy.coverage_loss, torch.minimum(attention, coverage).sum(-1))
    assert_close(out.copy.coverage, attention.sum(1))


def test_coverage_is_off_by_default_and_needs_copy_attention():
    assert ModelConfig().coverage is False
    assert make_model(copy_attention=True).copy_attention.coverage_weight is None
    on = make_model(copy_attention=True, coverage=True)
    added = set(on.state_dict()) - set(make_model(copy_attention=True).state_dict())
    assert added == {"copy_attention.coverage_weight"}
    with pytest.raises(ValueError, match="model.coverage=true is the copy attention's coverage"):
        ModelConfig(coverage=True)
    with pytest.raises(ValueError, match="model.coverage_loss_weight"):
        ModelConfig(copy_attention=True, coverage=True, coverage_loss_weight=-1.0)


def test_an_encoder_without_memory_ids_is_refused_with_copy_attention():
    model = make_model(copy_attention=True)
    src, mask, _ = make_batch()
    encoded = model.encode(src, mask)
    encoded.memory_ids = None
    with pytest.raises(ValueError, match="copy_attention=true needs the token ids of the memory"):
        model.init_decoder_state(encoded)


ALL_IDS = range(7, COPY_VOCAB)
"""The copy task over every id past the special ones."""


def copy_task_accuracy(model: HierSum) -> float:
    """The teacher-forced token accuracy of ``model`` on 256 held-out copy-task examples."""
    src, mask, tgt_in, labels = copy_task_batch(torch.Generator().manual_seed(99), 256, ALL_IDS)
    with torch.no_grad():
        return float(model(src, mask, tgt_in).log_probs.argmax(-1).eq(labels).float().mean())


@pytest.mark.slow  # trains two models
def test_copy_attention_learns_a_copy_task_that_the_plain_model_does_not_learn_in_the_same_steps():
    """Measured (120 steps, 2-core CPU, ~4 s each): copy ~0.99 token accuracy, plain ~0.2."""
    copying = train_on_copy_task(copy_attention=True, ids=ALL_IDS)
    copy_accuracy = copy_task_accuracy(copying)
    plain_accuracy = copy_task_accuracy(train_on_copy_task(copy_attention=False, ids=ALL_IDS))
    assert copy_accuracy > 0.9 and plain_accuracy < 0.5, (copy_accuracy, plain_accuracy)
    src, mask, _, labels = copy_task_batch(torch.Generator().manual_seed(7), 4, ALL_IDS)
    decoded = generate(copying, src, mask, GenerationOptions(beam_size=3, max_length=COPY_K + 1, min_length=0))
    assert decoded.sequences == labels.tolist()  # beam search copies the source
