"""Equivalence with the official hiersumm code, through fixtures it computed (see
shared/reference/hiersumm/README.md), and the checkpoint importer. The models run on the tests' ``device`` in full
fp32 and match the official (CPU) outputs within :func:`tests.helpers.official.tolerance` of it."""

from __future__ import annotations

import argparse

import pytest
import torch
from torch.testing import assert_close

from hiersum.checkpoints.official import OFFICIAL_PAD_ID, hiersum_from_official, parse_inter_layers
from hiersum.decoding.generation import GenerationOptions, generate
from tests.helpers import official as fixtures

NAME = "tiny_hier"

pytestmark = pytest.mark.usefixtures("exact_float32")


def load(file: str):
    return fixtures.load(NAME, file)


@pytest.fixture(scope="module")
def official_model(device):
    return fixtures.load_model(NAME, device)


@pytest.fixture(scope="module")
def inputs(device):
    return fixtures.load_inputs(NAME, device)


@pytest.fixture(scope="module", params=fixtures.FIXTURE_NAMES)
def model_and_inputs(request, device):
    """The imported model and inputs of each fixture, hierarchical and flat, on ``device``."""
    return fixtures.load_model(request.param, device), fixtures.load_inputs(request.param, device), request.param


def test_imported_config(official_model):
    config = official_model.config
    assert (config.d_model, config.heads, config.ff_size) == (32, 4, 64)
    assert (config.encoder_layers, list(config.inter_layers), config.inter_heads) == (4, [2, 3], 4)
    assert config.decoder_layers == 2
    assert not official_model.training


def test_token_states_match_official(official_model, inputs, device):
    src, mask, _ = inputs
    expected = fixtures.load_expected(NAME, device)
    atol = fixtures.tolerance(device)
    with torch.no_grad():
        out = official_model.encode(src, mask)
    assert_close(out.token_states[mask], expected["token_states"][mask], atol=atol, rtol=0)
    memory_mask = ~expected["memory_mask"][:, 0]  # official: (B, 1, M), True = pad
    assert torch.equal(out.memory_mask, memory_mask)
    assert_close(out.memory, expected["memory"].transpose(0, 1), atol=atol, rtol=0)  # (M, B, D)


def test_log_probs_match_official(model_and_inputs, device):
    model, (src, mask, tgt), name = model_and_inputs
    expected = fixtures.load_expected(name, device)["log_probs"].transpose(0, 1)  # (S, B, V) -> (B, S, V)
    real = tgt.ne(OFFICIAL_PAD_ID)
    with torch.no_grad():
        log_probs = model(src, mask, tgt).log_probs
    assert_close(log_probs[real], expected[real], atol=fixtures.tolerance(device), rtol=0)


def test_incremental_log_probs_match_official(model_and_inputs, device):
    model, (src, mask, tgt), name = model_and_inputs
    expected = fixtures.load_expected(name, device)["log_probs_incremental"].transpose(0, 1)
    real = tgt.ne(OFFICIAL_PAD_ID)
    with torch.no_grad():
        state = model.init_decoder_state(model.encode(src, mask))
        steps = []
        for t in range(tgt.size(1)):
            out = model.step(tgt[:, t], state)
            steps.append(out.log_probs)
            state = out.state
    assert_close(torch.stack(steps, 1)[real], expected[real], atol=fixtures.tolerance(device), rtol=0)


@pytest.mark.parametrize(("name", "setting", "expected"), fixtures.beam_cases())
def test_beam_search_matches_official(name, setting, expected, device):
    beam, alpha, min_length, max_length = setting.split("_")
    model = fixtures.load_model(name, device)
    src, mask, _ = fixtures.load_inputs(name, device)
    out = generate(model, src, mask, GenerationOptions.official(
        beam_size=int(beam.removeprefix("beam")), alpha=float(alpha.removeprefix("alpha")),
        min_length=int(min_length.removeprefix("min")), max_length=int(max_length.removeprefix("max")),
        stopping="official",
    ))
    assert out.sequences == expected["predictions"]
    assert out.scores == pytest.approx(expected["scores"], abs=fixtures.tolerance(device))


def test_old_layer_norm_names_are_accepted(official_model, inputs, device):
    checkpoint = load("checkpoint.pt")
    renamed = {}
    for key, value in checkpoint["model"].items():
        if "norm" in key:
            key = key.replace(".weight", ".a_2").replace(".bias", ".b_2")
        renamed[key] = value
    assert any(key.endswith(".a_2") for key in renamed)
    # Real checkpoints also carry the decoder's causal-mask buffers; they are skipped.
    renamed["decoder.transformer_layers.0.mask"] = torch.ones(1, 8, 8, dtype=torch.uint8).triu(1)
    old_opt = argparse.Namespace(**vars(checkpoint["opt"]))
    old_opt.inter_layers = "2,3"
    model = hiersum_from_official({"model": renamed, "opt": old_opt}).to(device)
    src, mask, tgt = inputs
    with torch.no_grad():
        assert_close(model(src, mask, tgt).log_probs, official_model(src, mask, tgt).log_probs)


def test_unmapped_keys_are_reported():
    checkpoint = load("checkpoint.pt")
    state = dict(checkpoint["model"])
    state["encoder.transformer_layers.0.extra_gate.weight"] = torch.zeros(3)
    with pytest.raises(ValueError, match=r"extra_gate"):
        hiersum_from_official({"model": state, "opt": checkpoint["opt"]})


def test_untied_embeddings_are_refused():
    checkpoint = load("checkpoint.pt")
    state = dict(checkpoint["model"])
    state["generator.0.weight"] = state["generator.0.weight"] + 1
    with pytest.raises(ValueError, match="shared"):
        hiersum_from_official({"model": state, "opt": checkpoint["opt"]})


@pytest.mark.parametrize(
    ("value", "expected"), [("[2, 3]", [2, 3]), ("6,7", [6, 7]), ([6, 7], [6, 7]), ("", [])]
)
def test_parse_inter_layers(value, expected):
    assert parse_inter_layers(value) == expected
