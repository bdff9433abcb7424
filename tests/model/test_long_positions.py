"""Paragraph positions past the position table (``model.max_positions``): computed from the sinusoid's formula,
the values a longer table would hold, so that a record of more paragraphs than the table is encoded whole; the
flat encoder's limit stays a one-line error naming the option."""

from __future__ import annotations

import pytest
import torch

from hiersum.model.layers import sinusoid_rows, sinusoid_table
from tests.helpers.model import PAD, VOCAB, make_model


def test_rows_past_the_table_continue_it_and_rows_within_are_the_tables_own():
    table = sinusoid_table(8, 16)
    within = torch.tensor([0, 7, 3, 3])
    assert torch.equal(sinusoid_rows(table, within, 8), table.index_select(0, within))
    beyond = torch.tensor([0, 5, 8, 11, 4999, 20000])
    longer = sinusoid_table(20001, 16)
    torch.testing.assert_close(sinusoid_rows(table, beyond, 20001), longer.index_select(0, beyond),
                               rtol=0, atol=2e-6)


def test_a_grid_of_more_paragraphs_than_the_table_encodes_as_with_a_longer_table(device):
    generator = torch.Generator().manual_seed(0)
    P, T = 12, 6
    src = torch.randint(7, VOCAB, (2, P, T), generator=generator)
    mask = torch.rand(2, P, T, generator=generator) < 0.8
    mask[:, :, 0] = True
    src, mask = src.masked_fill(~mask, PAD).to(device), mask.to(device)
    short_table = make_model(max_positions=8, device=device).encoder(src, mask)  # paragraphs 8..11 past its table
    long_table = make_model(max_positions=16, device=device).encoder(src, mask)  # the same weights (seed 0)
    torch.testing.assert_close(short_table.memory, long_table.memory, rtol=0, atol=1e-5)


def test_the_flat_encoders_limit_is_one_line_naming_the_option(device):
    model = make_model(encoder="flat", inter_layers=[], max_positions=8, device=device)
    src = torch.randint(7, VOCAB, (1, 9), device=device)
    with pytest.raises(ValueError, match=r"^the flat encoder reads at most model.max_positions=8 tokens; found a "
                                         r"source of L=9: raise model.max_positions") as error:
        model.encoder(src, torch.ones_like(src, dtype=torch.bool))
    assert "\n" not in str(error.value)
