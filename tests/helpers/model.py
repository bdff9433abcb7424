"""Tiny models, ragged batches and paragraph graphs shared by the model, decoding and checkpoint tests."""

from __future__ import annotations

import torch

from hiersum.config import ModelConfig
from hiersum.model import HierSum
from tests.helpers.config import tiny_model_config

VOCAB, PAD, BOS, EOS = 64, 6, 4, 5


def tiny_config(**overrides) -> ModelConfig:
    """The suite's tiny model (``conf/model/tiny.yaml``, :func:`tests.helpers.config.tiny_model_config`) made
    wide and deep enough for the model tests: 4 heads, two inter-paragraph layers, a 2-layer decoder."""
    sizes = dict(
        d_model=32,
        heads=4,
        ff_size=64,
        encoder_layers=3,
        inter_layers=[1, 2],
        inter_heads=4,
        decoder_layers=2,
        max_positions=128,
    )
    sizes.update(overrides)
    return tiny_model_config(**sizes)


COVERAGE_WEIGHT = -3.0
"""w_c of a tiny model with ``coverage=True`` (the parameter starts at 0, where coverage changes nothing): negative,
as training makes it, so that covered memory positions lose copy attention."""


def make_model(seed: int = 0, *, device: torch.device | str = "cpu", **overrides) -> HierSum:
    """The tiny network of the model tests (weights drawn with ``seed``, in eval mode) on ``device``; with
    ``coverage=True`` its coverage weight is :data:`COVERAGE_WEIGHT`."""
    torch.manual_seed(seed)
    model = HierSum(tiny_config(**overrides), vocab_size=VOCAB, pad_id=PAD, bos_id=BOS, eos_id=EOS)
    if model.copy_attention is not None and model.copy_attention.coverage_weight is not None:
        with torch.no_grad():
            model.copy_attention.coverage_weight.fill_(COVERAGE_WEIGHT)
    return model.eval().to(device)


def make_batch(seed: int = 0, *, device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """src [3, 4, 6] with ragged and empty paragraphs, its mask, tgt_in [3, 7] padded at the end, on ``device``."""
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(7, VOCAB, (3, 4, 6), generator=generator)
    lengths = torch.tensor([[6, 3, 0, 5], [2, 6, 6, 1], [4, 0, 0, 0]])  # tokens per paragraph
    mask = torch.arange(6) < lengths.unsqueeze(-1)
    src = src.masked_fill(~mask, PAD)
    tgt = torch.randint(7, VOCAB, (3, 7), generator=generator)
    tgt[:, 0] = BOS
    tgt[1, 5:] = PAD
    tgt[2, 3:] = PAD
    return src.to(device), mask.to(device), tgt.to(device)


def make_flat_batch(seed: int = 0, *, device: torch.device | str = "cpu") -> tuple[torch.Tensor, ...]:
    """The source of :func:`make_batch` joined for a flat model: src [3, 12] (12, 7 and 4 real tokens), its mask,
    and the same tgt_in [3, 7], on ``device``."""
    src, mask, tgt = make_batch(seed)
    flat = torch.full((3, 12), PAD)
    flat_mask = torch.zeros(3, 12, dtype=torch.bool)
    for b, length in enumerate((12, 7, 4)):
        flat[b, :length] = src[b][mask[b]][:length]
        flat_mask[b, :length] = True
    return flat.to(device), flat_mask.to(device), tgt.to(device)


def stepped_log_probs(model: HierSum, tgt: torch.Tensor, state) -> tuple[torch.Tensor, object]:
    """Feed ``tgt`` [B, S] one column at a time through :meth:`HierSum.step` from ``state``: the log-probabilities
    [B, S, V] of the steps, stacked, and the last state."""
    steps = []
    for t in range(tgt.size(1)):
        out = model.step(tgt[:, t], state)
        state = out.state
        steps.append(out.log_probs)
    return torch.stack(steps, 1), state


def random_graph(src_mask: torch.Tensor, seed: int = 0) -> torch.Tensor:
    """[B, P, P] symmetric weights in [0, 1], zero diagonal and zero at empty paragraphs, on the device of
    ``src_mask`` (drawn on the CPU: the same weights on every device)."""
    generator = torch.Generator().manual_seed(seed)
    B, P, _ = src_mask.shape
    graph = torch.rand(B, P, P, generator=generator)
    graph = ((graph + graph.transpose(1, 2)) / 2 * (1 - torch.eye(P))).to(src_mask.device)
    real = src_mask.any(-1).float()  # (B, P)
    return graph * real.unsqueeze(1) * real.unsqueeze(2)


def repeated_ngrams(tokens: list[int], n: int) -> list[tuple[int, ...]]:
    """Every n-gram of ``tokens`` that already occurred earlier in it (once per repetition)."""
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return [g for i, g in enumerate(grams) if g in grams[:i]]
