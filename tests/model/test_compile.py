"""``HierSum.compile()``: the repeated blocks compiled in place (state_dict keys unchanged, checkpoints
interchangeable with an eager model), the same numbers as eager, no graph break in a training step whose
packed layout is made beforehand, and a bounded number of graphs over batches of varied shapes."""

from __future__ import annotations

import copy

import pytest
import torch
import torch._dynamo
from torch.testing import assert_close

from hiersum.data.packing import PackedGrid
from hiersum.data.schema import IGNORE_INDEX
from hiersum.decoding.generation import GenerationOptions, generate
from hiersum.training.module import label_smoothed_nll
from tests.helpers.model import PAD, make_model
from tests.model.test_packed_encoder import ragged_batch

WIDEST = 30
"""The longest paragraph the batches of these tests may have (what ``collate`` gets from the data config)."""

SHAPES = [(4, 5, 9), (4, 5, 30), (2, 3, 17), (3, 6, 25), (5, 4, 30), (4, 7, 12), (3, 5, 29), (6, 2, 21)]
"""(B, P, T) of the batches of an "epoch": every size changes, more than once."""


def training_loss(model, src, mask, tgt, layout):
    """The training step's loss (as HierSumModule computes it), given the batch's packed layout."""
    labels = tgt.roll(-1, 1).masked_fill(tgt.eq(PAD), IGNORE_INDEX)
    return label_smoothed_nll(model(src, mask, tgt, layout=layout).logits, labels, 0.1)


def batch(seed: int, shape: tuple[int, int, int]):
    B, P, T = shape
    src, mask, tgt = ragged_batch(seed, B=B, P=P, T=T)
    return src, mask, tgt, PackedGrid.from_mask(mask, widest=WIDEST)


def test_compile_keeps_the_state_dict_keys_and_checkpoints_move_both_ways():
    eager = make_model(seed=1)
    compiled = make_model(seed=2)
    keys = list(compiled.state_dict())
    compiled.compile()
    assert list(compiled.state_dict()) == keys and not any("_orig_mod" in key for key in keys)
    assert all(block._compiled_call_impl is not None for block in compiled.compiled_blocks())
    compiled.load_state_dict(eager.state_dict())  # eager -> compiled
    assert all(torch.equal(a, b) for a, b in zip(compiled.state_dict().values(), eager.state_dict().values(),
                                                 strict=True))
    fresh = make_model(seed=3)
    fresh.load_state_dict(compiled.state_dict())  # compiled -> eager
    assert all(torch.equal(a, b) for a, b in zip(fresh.state_dict().values(), eager.state_dict().values(),
                                                 strict=True))


def test_the_compiled_blocks_are_every_encoder_and_decoder_layer():
    model = make_model()
    blocks = model.compiled_blocks()
    assert blocks == [*model.encoder.layers, *model.decoder.layers]
    assert {type(block).__name__ for block in blocks} == {"LocalLayer", "InterLayer", "DecoderLayer"}


def test_a_training_step_with_its_layout_made_beforehand_has_no_graph_break():
    """The whole step traced at once (the strictest form): the layout made by ``collate`` leaves no tensor
    value read into Python in the forward (sorting, bucket sizes) nor in the loss's normalisation."""
    model = make_model().train()
    src, mask, tgt, layout = batch(0, SHAPES[1])
    explanation = torch._dynamo.explain(training_loss)(model, src, mask, tgt, layout)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1


@pytest.mark.slow  # torch.compile of an epoch
def test_an_epoch_of_varied_batches_compiles_a_bounded_number_of_graphs():
    """Sizes are dynamic from the first batch: each block kind compiles one graph, and at most one more
    when two sizes first seen equal (duck sizing) or a size seen fixed turns out to vary: three block kinds,
    at most 6 graphs in all, however many batches follow (5 with torch 2.13)."""
    graphs = []

    def counting_backend(graph_module, _example_inputs):
        graphs.append(graph_module)
        return graph_module.forward

    torch._dynamo.reset()
    model = make_model().train()
    model.compile(backend=counting_backend)
    counts = []
    for seed, shape in enumerate(SHAPES * 2):
        training_loss(model, *batch(seed, shape)).backward()
        counts.append(len(graphs))
    assert counts[-1] <= 6, counts
    assert counts[len(SHAPES) - 1] == counts[-1], counts  # the second pass over the shapes compiles nothing


@pytest.mark.slow
def test_compiled_training_and_decoding_match_eager():
    """Inductor on this CPU: logits within 1e-4 (absolute), gradients within 1e-3 (relative norm) on a ragged
    batch, and beam search gives the same tokens (~80 s on 2 cores, most of it compiling)."""
    torch._dynamo.reset()
    eager = make_model().train()
    compiled = copy.deepcopy(eager)
    compiled.compile()
    src, mask, tgt, layout = batch(3, SHAPES[3])
    for model in (eager, compiled):
        torch.manual_seed(0)
        model.eval()
        training_loss(model, src, mask, tgt, layout).backward()
    with torch.no_grad():
        assert_close(compiled(src, mask, tgt, layout=layout).logits, eager(src, mask, tgt, layout=layout).logits,
                     atol=1e-4, rtol=0)
    for (name, mine), theirs in zip(compiled.named_parameters(), eager.parameters(), strict=True):
        if theirs.grad is not None and theirs.grad.norm() > 1e-6:  # not the keys' biases: zero up to rounding
            assert (mine.grad - theirs.grad).norm() / theirs.grad.norm() < 1e-3, name
    options = GenerationOptions(beam_size=3, max_length=8, min_length=2)
    with torch.no_grad():
        got = generate(compiled, src, mask, options).sequences
        expected = generate(eager, src, mask, options).sequences
    assert got == expected
