"""The hierarchical model's cost grows linearly with the number of paragraphs at a fixed paragraph length, counted in
FLOPs (``torch.utils.flop_counter``: matrix products and attention), not timed: each added block of paragraphs
costs the same, in a summary (encoder and beam search) and in a training step. The flat model's grows faster
(attention over the whole source). Timings to a million tokens: scripts/bench_length.py, docs/benchmarks.md."""

from __future__ import annotations

import pytest
import torch

from hiersum.decoding.generation import GenerationOptions, generate
from hiersum.model.flops import flop_counter
from hiersum.training.module import label_smoothed_nll
from tests.helpers.model import VOCAB, make_model

T = 12  # tokens per paragraph


def source(paragraphs: int, device: torch.device, *, flat: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    src = torch.randint(7, VOCAB, (1, paragraphs, T), generator=torch.Generator().manual_seed(0)).to(device)
    if flat:
        src = src.view(1, -1)
    return src, torch.ones_like(src, dtype=torch.bool)


def summary_flops(model, paragraphs: int, device: torch.device, *, flat: bool = False) -> int:
    src, mask = source(paragraphs, device, flat=flat)
    options = GenerationOptions(beam_size=2, min_length=6, max_length=6, stopping="full")
    with torch.inference_mode(), flop_counter() as counter:
        generate(model, src, mask, options)
    return counter.get_total_flops()


def training_flops(model, paragraphs: int, device: torch.device) -> int:
    src, mask = source(paragraphs, device)
    tgt = torch.randint(7, VOCAB, (1, 9), generator=torch.Generator().manual_seed(1)).to(device)
    with flop_counter() as counter:
        label_smoothed_nll(model(src, mask, tgt[:, :-1]).logits, tgt[:, 1:], 0.1).backward()
    return counter.get_total_flops()


def increments(costs: list[int]) -> list[int]:
    return [later - earlier for earlier, later in zip(costs, costs[1:], strict=False)]


@pytest.mark.parametrize("part", ["summary", "training step"])
def test_each_added_block_of_paragraphs_costs_the_same(part, device):
    model = make_model(device=device, max_positions=64)
    if part == "training step":
        model.train()
    count = summary_flops if part == "summary" else training_flops
    costs = [count(model, paragraphs, device) for paragraphs in (16, 32, 48, 64)]
    steps = increments(costs)  # the cost of 16 more paragraphs, three times
    assert all(step > 0 for step in steps)
    assert max(steps) <= 1.05 * min(steps), costs  # linear: a constant cost a paragraph


def test_the_flat_models_added_tokens_cost_more_and_more(device):
    model = make_model(device=device, encoder="flat", inter_layers=[], max_positions=1024)
    steps = increments([summary_flops(model, paragraphs, device, flat=True) for paragraphs in (16, 32, 48, 64)])
    assert steps[2] > 1.2 * steps[0]  # attention over the whole source: quadratic
