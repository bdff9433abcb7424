"""Equivalence of the flat baseline with the official hiersumm code (``-hier false``), through the
``tiny_flat`` fixture it computed (see shared/reference/hiersumm/README.md), on the tests' ``device`` in full fp32.
Log-probabilities and beams of both fixtures are checked in test_official_equivalence.py; the key mapping of both
models here."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from hiersum.checkpoints.official import official_key, official_key_to_ours
from hiersum.config import ModelConfig
from hiersum.model import FlatEncoder, HierSum
from tests.helpers import official as fixtures

NAME = "tiny_flat"

pytestmark = pytest.mark.usefixtures("exact_float32")


@pytest.fixture(scope="module")
def flat_model(device) -> HierSum:
    return fixtures.load_model(NAME, device)


@pytest.fixture(scope="module")
def inputs(device):
    return fixtures.load_inputs(NAME, device)


def test_imported_flat_config(flat_model):
    config = flat_model.config
    assert isinstance(flat_model.encoder, FlatEncoder)
    assert (config.encoder, config.d_model, config.heads, config.ff_size) == ("flat", 32, 4, 64)
    assert (config.encoder_layers, list(config.inter_layers), config.decoder_layers) == (4, [], 2)
    assert not flat_model.training


def test_flat_token_states_and_memory_match_official(flat_model, inputs, device):
    src, mask, _ = inputs
    expected = fixtures.load_expected(NAME, device)
    atol = fixtures.tolerance(device)
    with torch.no_grad():
        out = flat_model.encode(src, mask)
    assert out.token_states.shape == (3, src.size(1), 32)
    assert_close(out.token_states[mask], expected["token_states"][mask], atol=atol, rtol=0)
    official_mask = expected["memory_mask"].squeeze(-1).t().bool()  # (L, B, 1) float, 1 = real -> (B, L)
    assert torch.equal(out.memory_mask, official_mask)
    assert_close(out.memory, expected["memory"].transpose(0, 1), atol=atol, rtol=0)


def listed_keys(name: str) -> list[str]:
    listing = fixtures.REFERENCE / name
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
