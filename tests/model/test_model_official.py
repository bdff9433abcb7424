"""Equivalence with the official hiersumm code, through fixtures it computed (see
shared/reference/hiersumm/README.md), and the checkpoint importer."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from hiersum.convert import (
    OFFICIAL_PAD_ID,
    hiersum_from_official,
    load_official_hiersumm,
    official_key_to_ours,
    parse_inter_layers,
)

REFERENCE = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "hiersumm"
FIXTURE = REFERENCE / "fixtures" / "tiny_hier"


def load(name: str):
    if not FIXTURE.is_dir():
        pytest.skip(f"official fixtures not found at {FIXTURE}")
    with torch.serialization.safe_globals([argparse.Namespace]):
        return torch.load(FIXTURE / name, map_location="cpu", weights_only=True)


@pytest.fixture(scope="module")
def official_model():
    load("checkpoint.pt")  # skips without fixtures
    return load_official_hiersumm(FIXTURE / "checkpoint.pt")


@pytest.fixture(scope="module")
def inputs():
    data = load("inputs.pt")
    src = data["src"]  # (B, P, T)
    return src, src.ne(OFFICIAL_PAD_ID), data["tgt"].t().contiguous()  # tgt: (S, B) -> (B, S)


def test_imported_config(official_model):
    config = official_model.config
    assert (config.d_model, config.heads, config.ff_size) == (32, 4, 64)
    assert (config.encoder_layers, list(config.inter_layers), config.inter_heads) == (4, [2, 3], 4)
    assert config.decoder_layers == 2
    assert not official_model.training


def test_token_states_match_official(official_model, inputs):
    src, mask, _ = inputs
    expected = load("expected.pt")
    with torch.no_grad():
        out = official_model.encode(src, mask)
    assert_close(out.token_states[mask], expected["token_states"][mask], atol=1e-5, rtol=0)
    memory_mask = ~expected["memory_mask"][:, 0]  # official: (B, 1, M), True = pad
    assert torch.equal(out.memory_mask, memory_mask)
    assert_close(out.memory, expected["memory"].transpose(0, 1), atol=1e-5, rtol=0)  # (M, B, D)


def test_log_probs_match_official(official_model, inputs):
    src, mask, tgt = inputs
    expected = load("expected.pt")["log_probs"].transpose(0, 1)  # (S, B, V) -> (B, S, V)
    real = tgt.ne(OFFICIAL_PAD_ID)
    with torch.no_grad():
        log_probs = official_model.log_probs(src, mask, tgt)
    assert_close(log_probs[real], expected[real], atol=1e-5, rtol=0)


def test_incremental_log_probs_match_official(official_model, inputs):
    src, mask, tgt = inputs
    expected = load("expected.pt")["log_probs_incremental"].transpose(0, 1)
    real = tgt.ne(OFFICIAL_PAD_ID)
    with torch.no_grad():
        state = official_model.init_decoder_state(official_model.encode(src, mask))
        steps = []
        for t in range(tgt.size(1)):
            out = official_model.step(tgt[:, t], state)
            steps.append(out.log_probs)
            state = out.state
    assert_close(torch.stack(steps, 1)[real], expected[real], atol=1e-5, rtol=0)


def beam_settings():
    if not (FIXTURE / "beam.json").is_file():
        return []
    return sorted(json.loads((FIXTURE / "beam.json").read_text()).items())


@pytest.mark.parametrize(
    ("name", "expected"),
    beam_settings() or [pytest.param("none", {}, marks=pytest.mark.skip(reason=f"no official fixtures at {FIXTURE}"))],
)
def test_beam_search_matches_official(official_model, inputs, name, expected):
    beam, alpha, min_length, max_length = name.split("_")
    src, mask, _ = inputs
    out = official_model.generate(
        src,
        mask,
        beam_size=int(beam.removeprefix("beam")),
        alpha=float(alpha.removeprefix("alpha")),
        min_length=int(min_length.removeprefix("min")),
        max_length=int(max_length.removeprefix("max")),
        stopping="official",
    )
    assert out.sequences == expected["predictions"]
    assert out.scores == pytest.approx(expected["scores"], abs=1e-5)


def test_old_layer_norm_names_are_accepted(official_model, inputs):
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
    model = hiersum_from_official({"model": renamed, "opt": old_opt})
    src, mask, tgt = inputs
    with torch.no_grad():
        assert_close(model.log_probs(src, mask, tgt), official_model.log_probs(src, mask, tgt))


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


def test_every_official_key_of_the_paper_model_is_mapped():
    """Every key of the paper-size official state dict maps to a key of a HierSum of that size."""
    listing = REFERENCE / "state_dict_keys.txt"
    if not listing.is_file():
        pytest.skip(f"{listing} not found")
    from hiersum.config import ModelConfig
    from hiersum.model import HierSum

    keys = [
        line.split("\t")[0]
        for line in listing.read_text().splitlines()
        if line and not line.startswith("#")
    ]
    config = ModelConfig(
        d_model=32,
        heads=8,
        ff_size=64,
        encoder_layers=8,
        inter_layers=[6, 7],
        inter_heads=8,
        decoder_layers=1,
        dropout=0.0,
        max_positions=16,
    )
    ours = set(HierSum(config, vocab_size=10, pad_id=6, bos_id=4, eos_id=5).state_dict())
    mapped = {official_key_to_ours(k) for k in keys if not k.endswith((".pe", ".mask"))}
    assert mapped == ours


@pytest.mark.parametrize(
    ("value", "expected"), [("[2, 3]", [2, 3]), ("6,7", [6, 7]), ([6, 7], [6, 7]), ("", [])]
)
def test_parse_inter_layers(value, expected):
    assert parse_inter_layers(value) == expected
