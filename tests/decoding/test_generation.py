"""Decoding a model (hiersum.decoding.generation.generate): output shapes, beam 1 equals greedy,
min_length, stopping rules, cache, n-gram blocking, n-best, step cap."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from torch.testing import assert_close

from hiersum.decoding.generation import GenerationOptions, generate
from hiersum.decoding.search import beam_search, greedy_search, length_penalty
from hiersum.errors import UsageError
from tests.helpers.model import BOS, EOS, make_batch, make_flat_batch, make_model, repeated_ngrams

official = GenerationOptions.official
"""The official hiersumm search with changes: what these tests were written against."""


def eos_biased_model(bias: float, device: torch.device, **changes):
    model = make_model(device=device, **changes)
    with torch.no_grad():
        model.generator.bias[EOS] += bias
    return model


def greedy(model, src, mask, **kwargs):
    state = model.init_decoder_state(model.encode(src, mask))
    with torch.no_grad():
        return greedy_search(model.step, state, batch_size=src.size(0), bos_id=BOS, eos_id=EOS, device=src.device,
                             **{"alpha": 0.0, "min_length": 0, **kwargs})


@pytest.mark.parametrize("stopping", ["official", "full"])
def test_generate_output_structure(model, batch, stopping):
    src, mask, _ = batch
    out = generate(model, src, mask, official(beam_size=3, max_length=6, stopping=stopping))
    assert len(out.sequences) == len(out.scores) == src.size(0)
    for sequence, score in zip(out.sequences, out.scores, strict=True):
        assert 1 <= len(sequence) <= 6
        assert BOS not in sequence
        assert EOS not in sequence[:-1]
        assert sequence[-1] == EOS or len(sequence) == 6
        assert isinstance(score, float) and score < 0


@pytest.mark.parametrize("bias", [0.0, 3.0])
@pytest.mark.parametrize("alpha", [0.0, 0.7])
def test_beam_size_one_equals_greedy(batch, device, bias, alpha):
    model = eos_biased_model(bias, device)
    src, mask, _ = batch
    expected = greedy(model, src, mask, alpha=alpha, max_length=10)
    for stopping in ("official", "full"):
        out = generate(model, src, mask, official(beam_size=1, alpha=alpha, max_length=10, stopping=stopping))
        assert out.sequences == expected.sequences
        assert out.scores == pytest.approx(expected.scores, abs=1e-4)


def test_greedy_score_is_length_penalised_log_prob(model, batch, device):
    src, mask, _ = batch
    out = greedy(model, src, mask, alpha=0.5, max_length=5)
    for b, sequence in enumerate(out.sequences):
        tgt_in = torch.tensor([[BOS, *sequence[:-1]]], device=device)
        log_probs = model(src[b : b + 1], mask[b : b + 1], tgt_in).log_probs[0]
        total = log_probs.gather(-1, torch.tensor(sequence, device=device).unsqueeze(-1)).sum().item()
        assert out.scores[b] == pytest.approx(total / length_penalty(len(sequence), 0.5), abs=1e-4)


@pytest.mark.parametrize("beam_size", [1, 3])
@pytest.mark.parametrize("stopping", ["official", "full"])
def test_min_length_forbids_early_eos(batch, device, beam_size, stopping):
    model = eos_biased_model(30.0, device)  # EOS is by far the most likely token everywhere
    src, mask, _ = batch
    options = official(beam_size=beam_size, max_length=8, stopping=stopping)
    eager = generate(model, src, mask, options)
    assert eager.sequences == [[EOS]] * src.size(0)
    out = generate(model, src, mask, replace(options, min_length=4))
    for sequence in out.sequences:
        assert EOS not in sequence[:4]
        assert sequence[4] == EOS  # and then it ends as soon as it may


@pytest.mark.parametrize("greedy_search_on", [False, True])
def test_a_minimum_per_source_token_holds_each_example_to_its_own_length(batch, device, greedy_search_on):
    model = eos_biased_model(30.0, device)  # EOS is by far the most likely token everywhere
    src, mask, _ = batch
    options = official(beam_size=3, greedy=greedy_search_on, max_length=12, min_length=1,
                       min_length_per_source_token=0.25)
    source_tokens = mask.flatten(1).sum(-1).tolist()
    expected = [min(12, round(1 + 0.25 * n)) for n in source_tokens]
    assert len(set(expected)) > 1  # the batch's examples differ in length
    out = generate(model, src, mask, options)
    assert [len(sequence) - 1 for sequence in out.sequences] == expected  # each ends as soon as it may
    assert all(sequence[-1] == EOS and EOS not in sequence[:-1] for sequence in out.sequences)


def test_one_minimum_per_example_equal_to_the_shared_one_gives_the_same_search(model, batch, device):
    src, mask, _ = batch
    state = model.init_decoder_state(model.encode(src, mask))
    common = dict(batch_size=src.size(0), bos_id=BOS, eos_id=EOS, device=src.device, alpha=0.6, max_length=9)
    with torch.no_grad():
        shared = beam_search(model.step, state, beam_size=3, stopping="full", min_length=4, **common)
        each = beam_search(model.step, state, beam_size=3, stopping="full", min_length=[4] * src.size(0), **common)
        assert greedy(model, src, mask, min_length=[4] * src.size(0), max_length=9).sequences == greedy(
            model, src, mask, min_length=4, max_length=9).sequences
    assert each.sequences == shared.sequences and each.scores == shared.scores
    with pytest.raises(ValueError, match="one min_length per example"):
        beam_search(model.step, state, beam_size=3, stopping="full", min_length=[4], **common)


def test_max_length_ends_every_hypothesis(batch, device):
    model = eos_biased_model(-30.0, device)  # EOS never wins
    src, mask, _ = batch
    for beam_size in (1, 4):
        out = generate(model, src, mask, official(beam_size=beam_size, max_length=5))
        assert all(len(s) == 5 and EOS not in s for s in out.sequences)


def test_full_search_never_scores_worse_than_greedy_on_average(batch, device):
    """Sanity check: a wider search should not find worse hypotheses than greedy overall."""
    model = eos_biased_model(2.0, device)
    src, mask, _ = batch
    greedy_scores = greedy(model, src, mask, max_length=8).scores
    beam = generate(model, src, mask, official(beam_size=4, max_length=8, stopping="full")).scores
    assert sum(beam) >= sum(greedy_scores) - 1e-4


def test_unknown_stopping_rule_is_rejected(model, batch):
    src, mask, _ = batch
    with pytest.raises(ValueError, match="stopping"):
        generate(model, src, mask, official(stopping="eager"))


@pytest.mark.parametrize("beam_size", [1, 4])
def test_ngram_blocking_on_the_model_holds_for_every_returned_hypothesis(device, beam_size):
    model = eos_biased_model(-30.0, device)  # long outputs, so repeats would be likely
    src, mask, _ = make_batch(device=device)
    out = generate(model, src, mask, official(
        beam_size=beam_size, max_length=30, no_repeat_ngram_size=2, n_best=beam_size, stopping="full"
    ))
    free = generate(model, src, mask, official(beam_size=beam_size, max_length=30, stopping="full"))
    assert any(repeated_ngrams(s, 2) for s in free.sequences)  # without blocking the model repeats
    for hypotheses in out.n_best:
        for hypothesis in hypotheses:
            assert repeated_ngrams(hypothesis.tokens, 2) == []
    greedy_out = generate(model, src, mask, official(greedy=True, max_length=30, no_repeat_ngram_size=2))
    assert all(repeated_ngrams(s, 2) == [] for s in greedy_out.sequences)


@pytest.mark.parametrize(
    "settings",
    [
        dict(beam_size=3, stopping="full", alpha=0.6, n_best=3),
        dict(beam_size=3, stopping="official", min_length=3),
        dict(beam_size=2, stopping="full", no_repeat_ngram_size=2),
        dict(greedy=True, min_length=2),
    ],
)
@pytest.mark.parametrize("changes", [{}, {"copy_attention": True},
                                     {"copy_attention": True, "encoder": "flat", "inter_layers": []},
                                     {"copy_attention": True, "coverage": True}],
                         ids=["plain", "copy", "flat-copy", "coverage"])
def test_cached_decoding_equals_recomputing_the_prefix(batch, device, settings, changes):
    model = eos_biased_model(1.5, device, **changes)
    src, mask, _ = make_flat_batch(device=device) if changes.get("encoder") == "flat" else batch
    cached = generate(model, src, mask, official(max_length=9, **settings))
    recomputed = generate(model, src, mask, official(max_length=9, **settings), use_cache=False)
    assert cached.sequences == recomputed.sequences
    assert cached.scores == pytest.approx(recomputed.scores, abs=1e-4)
    assert [[h.tokens for h in hs] for hs in cached.n_best] == [[h.tokens for h in hs] for hs in recomputed.n_best]


@pytest.mark.parametrize("stopping", ["official", "full"])
@pytest.mark.parametrize("changes", [{"copy_attention": True}, {"copy_attention": True, "coverage": True}],
                         ids=["copy", "coverage"])
def test_a_coverage_penalty_decodes_the_same_cached_uncached_and_compiled(batch, device, stopping, changes):
    """The penalty follows each beam's own attention through the reorderings: the cache, the whole prefix fed again
    and the static (fixed-size cache) step agree; and it changes the search (else this test would test nothing)."""
    model = eos_biased_model(1.5, device, **changes)
    src, mask, _ = batch
    options = official(max_length=9, beam_size=3, stopping=stopping, n_best=3, coverage_penalty=0.5)
    cached = generate(model, src, mask, options)
    recomputed = generate(model, src, mask, options, use_cache=False)
    static = generate(model, src, mask, replace(options, compile_step=True))
    for other in (recomputed, static):
        assert [[h.tokens for h in hs] for hs in other.n_best] == [[h.tokens for h in hs] for hs in cached.n_best]
        assert other.scores == pytest.approx(cached.scores, abs=1e-4)
    free = generate(model, src, mask, replace(options, coverage_penalty=0.0))
    assert free.scores != pytest.approx(cached.scores, abs=1e-4)


def test_a_coverage_penalty_needs_copy_attention(model, batch):
    src, mask, _ = batch
    with pytest.raises(UsageError, match="model.copy_attention=true"):
        generate(model, src, mask, official(coverage_penalty=1.0))
    with pytest.raises(ValueError, match="decode.coverage_penalty must be >= 0"):
        official(coverage_penalty=-0.5)


@pytest.mark.parametrize("bias", [0.0, 3.0])
def test_greedy_flag_equals_beam_size_one(batch, device, bias):
    model = eos_biased_model(bias, device)
    src, mask, _ = batch
    common = dict(alpha=0.5, max_length=10, no_repeat_ngram_size=3)
    beam = generate(model, src, mask, official(beam_size=1, stopping="full", **common))
    greedy_out = generate(model, src, mask, official(greedy=True, **common))
    assert greedy_out.sequences == beam.sequences
    assert greedy_out.scores == pytest.approx(beam.scores, abs=1e-4)


@pytest.mark.parametrize("stopping", ["official", "full"])
def test_n_best_is_distinct_sorted_by_score_and_led_by_the_best(batch, device, stopping):
    model = eos_biased_model(2.0, device)
    src, mask, _ = batch
    options = official(beam_size=4, n_best=3, alpha=0.6, max_length=8, stopping=stopping)
    out = generate(model, src, mask, options)
    single = generate(model, src, mask, official(beam_size=4, alpha=0.6, max_length=8, stopping=stopping))
    assert out.sequences == single.sequences
    for b, hypotheses in enumerate(out.n_best):
        assert 1 <= len(hypotheses) <= 3
        scores = [h.score for h in hypotheses]
        assert scores == sorted(scores, reverse=True)
        assert len({tuple(h.tokens) for h in hypotheses}) == len(hypotheses)
        assert hypotheses[0].tokens == out.sequences[b] and hypotheses[0].score == out.scores[b]
    if stopping == "full":
        assert all(len(hypotheses) == 3 for hypotheses in out.n_best)
    with pytest.raises(ValueError, match="n_best"):
        generate(model, src, mask, official(beam_size=2, n_best=3))


def test_max_steps_caps_decoding_over_max_and_min_length(batch, device):
    model = eos_biased_model(-30.0, device)
    src, mask, _ = batch
    out = generate(model, src, mask, official(beam_size=3, min_length=20, max_length=40, max_steps=6))
    assert all(len(s) == 6 for s in out.sequences)
    with pytest.raises(ValueError, match="max_steps"):
        generate(model, src, mask, official(max_steps=0))


@pytest.mark.parametrize("parts", [{}, {"copy_attention": True}, {"copy_attention": True, "coverage": True}],
                         ids=["plain", "copy", "coverage"])
def test_grouped_state_steps_equal_per_row_memory(batch, device, parts):
    """Beams reading their example's memory entry give what a per-row copy of the memory gives (the copy
    attention's memory included), and the coverage of each row moves with it."""
    model = make_model(device=device, **parts)
    src, mask, tgt = batch
    start = model.init_decoder_state(model.encode(src, mask))
    K = 3
    grouped = start.tile(K)  # memory shared per example
    copied = start.reorder(torch.arange(src.size(0), device=device).repeat_interleave(K))  # memory copied per row
    assert grouped.decoder.memory[0].keys.size(0) == src.size(0)
    assert copied.decoder.memory[0].keys.size(0) == src.size(0) * K
    tokens = torch.randint(7, 60, (src.size(0) * K,)).to(device)  # beams of an example apart from the first step
    a, b = model.step(tokens, grouped), model.step(tokens, copied)
    assert_close(a.log_probs, b.log_probs, atol=1e-5, rtol=0)
    origin = torch.tensor([2, 0, 1, 3, 3, 5, 8, 6, 7], device=device)  # within-example beam origins
    next_tokens = torch.randint(7, 60, (src.size(0) * K,)).to(device)  # drawn on the CPU: the same on every device
    rows = torch.tensor([0, 1, 2, 6, 7, 8], device=device)
    examples = torch.tensor([0, 2], device=device)
    a2 = model.step(next_tokens[rows], a.state.reorder_beams(origin).select_examples(examples))
    b2 = model.step(next_tokens[rows], b.state.reorder(origin).reorder(rows))
    assert_close(a2.log_probs, b2.log_probs, atol=1e-5, rtol=0)
    if model.config.coverage:  # the guard: beams of an example have their own coverage, which must move with them
        assert not torch.allclose(a.state.coverage[0], a.state.coverage[1])
        assert_close(a2.state.coverage, b2.state.coverage, atol=1e-6, rtol=0)


def test_the_python_api_and_the_command_line_decode_with_one_options_type():
    """One type, one set of defaults, one check: :class:`GenerationOptions` is :class:`DecodeConfig`, its defaults
    are the shipped decode config's (``conf/decode/default.yaml``), and the search itself has none of its own."""
    from hiersum.commands.composed import typed_config
    from hiersum.config import DecodeConfig
    from hiersum.decoding.search import beam_search
    from tests.helpers.config import compose_config

    assert GenerationOptions is DecodeConfig
    shipped = typed_config(compose_config("summarize", ["checkpoint=c", "input=i", "output=o"], "unused").decode)
    assert GenerationOptions() == shipped and GenerationOptions.from_config(shipped) is shipped
    assert (GenerationOptions().beam_size, GenerationOptions().alpha, GenerationOptions().stopping) == (4, 0.6, "full")
    assert GenerationOptions.official().stopping == "official" and GenerationOptions.official().beam_size == 5
    with pytest.raises(ValueError, match="decode.stopping must be one of 'full', 'official', found 'first'"):
        GenerationOptions(stopping="first")
    with pytest.raises(TypeError, match="stopping"):
        beam_search(None, None, batch_size=1, beam_size=2, bos_id=0, eos_id=1, alpha=0.0, min_length=0,
                    max_length=4)
