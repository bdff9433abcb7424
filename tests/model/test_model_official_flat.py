"""Equivalence of the flat baseline with the official hiersumm code (``-hier false``), through the
``tiny_flat`` fixture it computed (see shared/reference/hiersumm/README.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from hiersum.config import ModelConfig
from hiersum.convert import OFFICIAL_PAD_ID, load_official_hiersumm, official_key, official_key_to_ours
from hiersum.model import FlatEncoder, HierSum

REFERENCE = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "hiersumm"
FIXTURE = REFERENCE / "fixtures" / "tiny_flat"


def load(name: str):
    if not FIXTURE.is_dir():
        pytest.skip(f"official fixtures not found at {FIXTURE}")
    with torch.serialization.safe_globals([argparse.Namespace]):
        return torch.load(FIXTURE / name, map_location="cpu", weights_only=True)


@pytest.fixture(scope="module")
def flat_model() -> HierSum:
    load("checkpoint.pt")  # skips without fixtures
    return load_official_hiersumm(FIXTURE / "checkpoint.pt")


@pytest.fixture(scope="module")
def inputs():
    data = load("inputs.pt")
    src = data["src"]  # (B, L)
    return src, src.ne(OFFICIAL_PAD_ID), data["tgt"].t().contiguous()  # tgt: (S, B) -> (B, S)


def test_imported_flat_config(flat_model):
    config = flat_model.config
    assert isinstance(flat_model.encoder, FlatEncoder)
    assert (config.encoder, config.d_model, config.heads, config.ff_size) == ("flat", 32, 4, 64)
    assert (config.encoder_layers, list(config.inter_layers), config.decoder_layers) == (4, [], 2)
    assert not flat_model.training


def test_flat_token_states_and_memory_match_official(flat_model, inputs):
    src, mask, _ = inputs
    expected = load("expected.pt")
    with torch.no_grad():
        out = flat_model.encode(src, mask)
    assert out.token_states.shape == (3, src.size(1), 32)
    assert_close(out.token_states[mask], expected["token_states"][mask], atol=1e-5, rtol=0)
    official_mask = expected["memory_mask"].squeeze(-1).t().bool()  # (L, B, 1) float, 1 = real -> (B, L)
    assert torch.equal(out.memory_mask, official_mask)
    assert_close(out.memory, expected["memory"].transpose(0, 1), atol=1e-5, rtol=0)


def test_flat_log_probs_match_official(flat_model, inputs):
    src, mask, tgt = inputs
    expected = load("expected.pt")["log_probs"].transpose(0, 1)  # (S, B, V) -> (B, S, V)
    real = tgt.ne(OFFICIAL_PAD_ID)
    with torch.no_grad():
        log_probs = flat_model.log_probs(src, mask, tgt)
    assert_close(log_probs[real], expected[real], atol=1e-5, rtol=0)


def test_flat_incremental_log_probs_match_official(flat_model, inputs):
    src, mask, tgt = inputs
    expected = load("expected.pt")["log_probs_incremental"].transpose(0, 1)
    real = tgt.ne(OFFICIAL_PAD_ID)
    with torch.no_grad():
        state = flat_model.init_decoder_state(flat_model.encode(src, mask))
        steps = []
        for t in range(tgt.size(1)):
            out = flat_model.step(tgt[:, t], state)
            steps.append(out.log_probs)
            state = out.state
    assert_close(torch.stack(steps, 1)[real], expected[real], atol=1e-5, rtol=0)


def beam_settings():
    if not (FIXTURE / "beam.json").is_file():
        return [pytest.param("none", {}, marks=pytest.mark.skip(reason=f"no official fixtures at {FIXTURE}"))]
    return sorted(json.loads((FIXTURE / "beam.json").read_text()).items())


@pytest.mark.parametrize(("name", "expected"), beam_settings())
def test_flat_beam_search_matches_official(flat_model, inputs, name, expected):
    beam, alpha, min_length, max_length = name.split("_")
    src, mask, _ = inputs
    out = flat_model.generate(
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


def listed_keys(name: str) -> list[str]:
    listing = REFERENCE / name
    if not listing.is_file():
        pytest.skip(f"{listing} not found")
    return [line.split("\t")[0] for line in listing.read_text().splitlines() if line and not line.startswith("#")]


@pytest.mark.parametrize(
    ("listing", "encoder"), [("state_dict_keys.txt", "hierarchical"), ("state_dict_keys_flat.txt", "flat")]
)
def test_key_mapping_both_ways_covers_the_paper_models(listing, encoder):
    """Every official key maps onto a HierSum of the paper's layout, and our keys map back onto exactly
    the official parameter keys (the inverse used to export official checkpoints)."""
    keys = [k for k in listed_keys(listing) if not k.endswith((".pe", ".mask"))]
    config = ModelConfig(
        d_model=32, heads=8, ff_size=64, encoder_layers=8, inter_layers=[6, 7] if encoder == "hierarchical" else [],
        inter_heads=8, decoder_layers=1, dropout=0.0, max_positions=16, encoder=encoder,
    )
    ours = set(HierSum(config, vocab_size=10, pad_id=6, bos_id=4, eos_id=5).state_dict())
    assert {official_key_to_ours(k) for k in keys} == ours
    assert {official_key(k, config) for k in ours} == set(keys)
