"""The decoding step's fast paths give the outputs of the plain one: the step weights (stacked q/k/v,
transposed output weight), the static cache step and its compiled form (``decode.compile_step``), with copy
attention (``model.copy_attention``) as well."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from torch.testing import assert_close

from hiersum.decoding.generation import GenerationOptions, generate
from hiersum.decoding.search import beam_search, greedy_search
from tests.helpers.model import BOS, EOS, PAD, make_batch, make_model

SETTINGS = [
    dict(beam_size=3, stopping="full", alpha=0.6, n_best=3),
    dict(beam_size=4, stopping="official", min_length=3),
    dict(beam_size=2, stopping="full", no_repeat_ngram_size=2),
    dict(greedy=True, min_length=2),
]


def search(model, src, mask, options: GenerationOptions, *, step_weights: bool, static: bool = False):
    """Beam (or greedy) search as :func:`generate` runs it, with or without the state's step weights,
    over :meth:`HierSum.step` or :meth:`HierSum.static_step`."""
    with torch.no_grad():
        encoded = model.encode(src, mask)
        state = model.init_decoder_state(encoded, cache_capacity=options.max_length + static)
        if not step_weights:
            state = replace(state, decoder=replace(state.decoder, step_weights=None))
        common = dict(batch_size=src.size(0), bos_id=BOS, eos_id=EOS, alpha=options.alpha,
                      min_length=options.min_length, max_length=options.max_length,
                      no_repeat_ngram_size=options.no_repeat_ngram_size, forbidden_ids=(PAD, BOS))
        step = model.static_step if static else model.step
        if options.greedy:
            return greedy_search(step, state, **common)
        return beam_search(step, state, beam_size=options.beam_size, stopping=options.stopping,
                           n_best=options.n_best, **common)


def hypotheses(out) -> list[list[list[int]]]:
    return [[h.tokens for h in hs] for hs in out.n_best]


def eos_biased_model(bias: float, *, copy: bool = False, coverage: bool = False):
    model = make_model(seed=3, copy_attention=copy or coverage, coverage=coverage)
    with torch.no_grad():
        model.generator.bias[EOS] += bias
    return model


@pytest.fixture(scope="module", params=[(1.0, False), (1.8, False), (3.0, True)], ids=["long", "ragged", "copy"])
def model(request):
    """EOS bias 1: every hypothesis runs to max_length; 1.8: examples finish at different steps (2 to 10); copy: with
    copy attention (EOS bias 3: examples finish at different steps)."""
    bias, copy = request.param
    return eos_biased_model(bias, copy=copy)


@pytest.mark.parametrize("settings", SETTINGS)
def test_step_weights_give_the_hypotheses_and_scores_of_the_layers_own_weights(model, settings):
    src, mask, _ = make_batch(1)
    options = GenerationOptions.official(max_length=10, **settings)
    expected = search(model, src, mask, options, step_weights=False)
    fast = search(model, src, mask, options, step_weights=True)
    assert hypotheses(fast) == hypotheses(expected)
    assert fast.scores == pytest.approx(expected.scores, rel=1e-6, abs=1e-6)
    assert fast.sequences == generate(model, src, mask, options).sequences  # what generate runs


def test_one_step_with_step_weights_equals_the_plain_step(model):
    src, mask, _ = make_batch(2)
    with torch.no_grad():
        encoded = model.encode(src, mask)
        tokens = torch.tensor([BOS, 9, 17])
        fast = model.step(tokens, model.init_decoder_state(encoded, cache_capacity=4))
        state = model.init_decoder_state(encoded, cache_capacity=4)
        plain = model.step(tokens, replace(state, decoder=replace(state.decoder, step_weights=None)))
    assert_close(fast.log_probs, plain.log_probs, atol=1e-6, rtol=1e-6)
    assert_close(fast.state.decoder.self_attn.buffers[1], plain.state.decoder.self_attn.buffers[1], atol=1e-6,
                 rtol=1e-6)


def test_step_weights_follow_the_parameters_they_are_made_from(model):
    """Made when decoding starts, so loading other weights (or training) changes the next decoding."""
    src, mask, _ = make_batch(1)
    options = GenerationOptions.official(beam_size=3, max_length=10)
    other = make_model(seed=11, copy_attention=model.copy_attention is not None)
    before = generate(other, src, mask, options)
    other.load_state_dict(model.state_dict())
    after = generate(other, src, mask, options)
    assert after.sequences == generate(model, src, mask, options).sequences
    assert after.sequences != before.sequences  # the guard: the two weight sets decode differently


def test_step_weights_add_no_state_dict_key(model):
    keys = set(model.state_dict())
    generate(model, *make_batch(1)[:2], GenerationOptions.official(beam_size=2, max_length=3))
    assert set(model.state_dict()) == keys
    assert {k for k in keys if ".self_attn." in k} >= {"decoder.layers.0.self_attn.query.weight",
                                                        "decoder.layers.0.self_attn.value.bias"}


@pytest.mark.parametrize("settings", SETTINGS)
def test_static_cache_step_gives_the_hypotheses_of_the_growing_one(model, settings):
    src, mask, _ = make_batch(1)
    options = GenerationOptions.official(max_length=10, **settings)
    expected = search(model, src, mask, options, step_weights=True)
    static = search(model, src, mask, options, step_weights=True, static=True)
    assert hypotheses(static) == hypotheses(expected)
    assert static.scores == pytest.approx(expected.scores, rel=1e-5, abs=1e-5)


def test_static_step_without_room_raises(model):
    src, mask, _ = make_batch(1)
    with torch.no_grad():
        state = model.init_decoder_state(model.encode(src, mask), cache_capacity=1)
        state = model.static_step(torch.full((3,), BOS), state).state
        with pytest.raises(ValueError, match="room for position 1, found capacity 1"):
            model.static_step(torch.full((3,), BOS), state)


@pytest.mark.slow
@pytest.mark.parametrize("copy", [False, True, "coverage"], ids=["plain", "copy", "coverage"])
def test_compiled_step_graphs_give_the_hypotheses_of_eager_decoding(copy):
    """``compile_step`` as dynamo captures it (``aot_eager``: the graphs without inductor's code generation):
    the hypotheses of eager decoding, examples finishing at different steps (the rows shrink); at most three
    graphs (the first example count, a dynamic count, and a count of 1, which dynamo always specialises)."""
    src, mask, _ = make_batch(1)
    bias = 3.0 if copy else 1.8  # examples end at different steps
    kinds = dict(copy=bool(copy), coverage=copy == "coverage")
    model, compiled_model = eos_biased_model(bias, **kinds), eos_biased_model(bias, **kinds)
    options = GenerationOptions.official(max_length=10, **SETTINGS[2])
    eager = generate(model, src, mask, options)
    torch._dynamo.utils.counters.clear()
    compiled_model.compile_step(backend="aot_eager")
    compiled = generate(compiled_model, src, mask, replace(options, compile_step=True))
    assert hypotheses(compiled) == hypotheses(eager)
    assert len({len(sequence) for sequence in eager.sequences}) > 1  # the guard: examples ended apart
    assert compiled.scores == pytest.approx(eager.scores, rel=1e-5, abs=1e-5)
    assert 1 <= torch._dynamo.utils.counters["stats"]["unique_graphs"] <= 3


@pytest.mark.slow
@pytest.mark.parametrize("copy", [False, True], ids=["plain", "copy"])
def test_inductor_compiled_step_gives_the_hypotheses_of_eager_decoding(copy):
    """What ``decode.compile_step=true`` runs (inductor), on one example (one graph: compiling takes long on CPU)."""
    src, mask, _ = make_batch(1)
    model, compiled_model = eos_biased_model(1.0, copy=copy), eos_biased_model(1.0, copy=copy)
    options = GenerationOptions.official(max_length=8, beam_size=3, stopping="full", alpha=0.6, n_best=3)
    eager = generate(model, src[:1], mask[:1], options)
    compiled = generate(compiled_model, src[:1], mask[:1], replace(options, compile_step=True))
    assert compiled_model.compiled_step is not None
    assert hypotheses(compiled) == hypotheses(eager)
    assert compiled.scores == pytest.approx(eager.scores, rel=1e-5, abs=1e-5)
