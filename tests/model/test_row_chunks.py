"""Long inputs run through the encoder a run of whole paragraphs at a time (``hiersum.model.encoder.CHUNK_ROWS``,
:meth:`PackedGrid.row_chunks`): the chunks cover every packed row once, in order, and the chunked encoder gives the
one-pass results (states, the memory, and the gradients of a training step). The threshold is lowered here so that
a small grid is chunked."""

from __future__ import annotations

import pytest
import torch

import hiersum.model.encoder as encoder_module
from hiersum.data.packing import PackedGrid
from tests.helpers.model import PAD, VOCAB, make_model


def ragged_grid(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """src [2, 9, 7] with paragraphs of 0 to 7 tokens (some empty) and its mask."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 8, (2, 9), generator=generator)
    lengths[0, 0] = 7
    mask = torch.arange(7) < lengths.unsqueeze(-1)
    src = torch.randint(7, VOCAB, (2, 9, 7), generator=generator).masked_fill(~mask, PAD)
    return src, mask


@pytest.mark.parametrize("max_rows", [1, 6, 10, 25])
def test_chunks_cover_the_rows_once_in_whole_paragraphs(max_rows):
    src, mask = ragged_grid()
    layout = PackedGrid.from_mask(mask)
    chunks = layout.row_chunks(max_rows)
    assert chunks[0].start == 0 and chunks[-1].stop == layout.n_rows
    assert all(a.stop == b.start for a, b in zip(chunks, chunks[1:], strict=False))
    assert sum(chunk.n_paragraphs for chunk in chunks) == layout.n_paragraphs
    for chunk in chunks:
        paragraphs = layout.paragraph_of_row[chunk.start:chunk.stop]
        assert paragraphs.unique().tolist() == list(range(chunk.first_paragraph,
                                                          chunk.first_paragraph + chunk.n_paragraphs))
        # no paragraph cut: the rows before and after belong to other paragraphs
        assert chunk.start == 0 or layout.paragraph_of_row[chunk.start - 1] < paragraphs[0]
        # at most max_rows, unless one paragraph alone is longer
        assert chunk.stop - chunk.start <= max_rows or chunk.n_paragraphs == 1


def test_a_chunks_local_attention_is_that_rows_part_of_the_whole(device):
    src, mask = ragged_grid()
    layout = PackedGrid.from_mask(mask.to(device))
    attention = make_model(device=device).encoder.layers[0].self_attn
    x = torch.randn(layout.n_rows, attention.out.in_features, generator=torch.Generator().manual_seed(1)).to(device)
    with torch.no_grad():
        whole = attention.self_attend_buckets(x, layout)
        for chunk in layout.row_chunks(10):
            part = attention.self_attend_buckets(x[chunk.start:chunk.stop], chunk)
            torch.testing.assert_close(part, whole[chunk.start:chunk.stop], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("graph", ["none", "similarity"])
def test_the_chunked_encoder_gives_the_one_pass_states(device, monkeypatch, graph):
    """Summarizing (no gradients) chunks past CHUNK_ROWS; training without recompute does not (nothing to save)."""
    src, mask = ragged_grid()
    src, mask = src.to(device), mask.to(device)
    paragraph_graph = torch.rand(2, 9, 9, generator=torch.Generator().manual_seed(2)).to(device)
    model = make_model(graph=graph, device=device)
    with torch.no_grad():
        one_pass = model.encoder(src, mask, paragraph_graph=paragraph_graph)
        monkeypatch.setattr(encoder_module, "CHUNK_ROWS", 10)  # the grid's ~60 rows in runs of at most 10
        assert len(PackedGrid.from_mask(mask).row_chunks(10)) > 4
        chunked = model.encoder(src, mask, paragraph_graph=paragraph_graph)
    torch.testing.assert_close(chunked.memory, one_pass.memory, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(chunked.token_states, one_pass.token_states, rtol=1e-5, atol=1e-5)
    assert not torch.equal(chunked.memory, torch.zeros_like(chunked.memory))


def test_attention_for_inspection_is_returned_whole_when_chunking(device, monkeypatch):
    src, mask = ragged_grid()
    model = make_model(device=device)
    with torch.no_grad():
        one_pass = model.encoder(src.to(device), mask.to(device), return_attention=True)
        monkeypatch.setattr(encoder_module, "CHUNK_ROWS", 10)
        chunked = model.encoder(src.to(device), mask.to(device), return_attention=True)
    for got, expected in zip(chunked.pooling_weights, one_pass.pooling_weights, strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(chunked.memory, one_pass.memory, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("chunk_rows", [10, 1 << 16])  # chunked, and one pass under checkpointing
def test_recomputed_encoder_gives_the_same_loss_and_gradients_as_kept_activations(device, monkeypatch, chunk_rows):
    src, mask = ragged_grid()
    src, mask = src.to(device), mask.to(device)

    def train_step(recompute: bool) -> tuple[torch.Tensor, list[torch.Tensor]]:
        model = make_model(device=device).train()
        if recompute:
            model.recompute_encoder()
        memory = model.encoder(src, mask).memory  # (B, P, D), layer-normed
        # a fixed random readout: the sum of squares of layer-normed states is nearly constant, and its gradients
        # (~1e-4, cancellations' noise) were within a CUDA run's rounding of zero
        readout = torch.randn(memory.shape, generator=torch.Generator().manual_seed(3)).to(device)
        loss = (memory * readout).sum()
        loss.backward()
        return loss.detach(), [p.grad for p in model.encoder.parameters()]

    kept = train_step(False)
    monkeypatch.setattr(encoder_module, "CHUNK_ROWS", chunk_rows)
    recomputed = train_step(True)
    torch.testing.assert_close(recomputed[0], kept[0], rtol=1e-5, atol=1e-5)
    for got, expected in zip(recomputed[1], kept[1], strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)


def test_recompute_keeps_fewer_activations_for_the_backward(device, monkeypatch):
    """What the training step saves for its backward pass (the tensors autograd keeps) falls with recompute."""
    src, mask = ragged_grid()
    src, mask = src.to(device), mask.to(device)
    monkeypatch.setattr(encoder_module, "CHUNK_ROWS", 10)

    def saved_elements(recompute: bool) -> int:
        model = make_model(device=device).train()
        if recompute:
            model.recompute_encoder()
        total = 0

        def pack(tensor: torch.Tensor) -> torch.Tensor:
            nonlocal total
            total += tensor.numel()
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            model.encoder(src, mask).memory.sum().backward()
        return total

    assert saved_elements(True) < 0.5 * saved_elements(False)


def test_the_flat_encoder_refuses_recompute_in_one_line(device):
    model = make_model(encoder="flat", inter_layers=[], device=device)
    with pytest.raises(ValueError, match=r"^model.encoder=flat has no layers that recompute") as error:
        model.recompute_encoder()
    assert "\n" not in str(error.value)
