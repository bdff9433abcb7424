"""``logit_statistics``: the same three numbers of each row and the same gradient as autograd over the whole fp32
tensor, whatever the blocks, the dtype or the gradients that reach it."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from hiersum.model import HierSum
from hiersum.training import logit_statistics as module
from hiersum.training.logit_statistics import logit_statistics
from hiersum.training.loss import teacher_forced_nll
from tests.helpers.copy_task import COPY_VOCAB, UNK, copy_task_batch, hide_copied_words
from tests.helpers.model import BOS, EOS, PAD, tiny_config


def reference(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The statistics by autograd over ``logits.float()``: what the loss computed before."""
    x = logits.float()
    return x.logsumexp(-1), x.gather(-1, labels.unsqueeze(-1)).squeeze(-1), x.mean(-1)


def loss_of(stats: tuple[torch.Tensor, ...], weights: tuple[float, float, float]) -> torch.Tensor:
    """A loss reading all three with its own weight and a per-row factor, so each gradient path is exercised."""
    factor = torch.linspace(0.5, 1.5, stats[0].numel(), device=stats[0].device).view(stats[0].shape)
    return sum(w * (s * factor).sum() for w, s in zip(weights, stats, strict=True))


@pytest.mark.parametrize("block_elements", [1, 3 * 16, 1 << 20], ids=["row-a-block", "three-rows", "one-block"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_statistics_and_gradient_match_autograd_over_the_whole_tensor(block_elements, dtype, monkeypatch, device):
    monkeypatch.setattr(module, "BLOCK_ELEMENTS", block_elements)
    generator = torch.Generator().manual_seed(0)
    logits = (torch.randn(2, 7, 16, generator=generator) * 3).to(device, dtype)  # (B, S, V): 14 rows
    labels = torch.randint(0, 16, (2, 7), generator=generator).to(device)
    weights = (1.0, -0.9, -0.1)
    ours = logits.clone().requires_grad_()
    theirs = logits.clone().requires_grad_()
    stats = logit_statistics(ours, labels)
    expected = reference(theirs, labels)
    for got, want in zip(stats, expected, strict=True):
        assert got.dtype == torch.float32 and got.shape == (2, 7)
        assert_close(got, want)
    loss_of(stats, weights).backward()
    loss_of(expected, weights).backward()
    assert ours.grad.dtype == dtype
    assert ours.grad.abs().sum() > 0
    assert_close(ours.grad, theirs.grad)


def test_a_statistic_no_loss_reads_adds_nothing_and_the_logits_stay(device):
    """Only the normalizer and the label read (smoothing 0): the gradient is softmax - onehot, and the backward leaves
    the logits (fp32, which ``.float()`` would not copy) as they were."""
    logits = torch.randn(5, 9, device=device, requires_grad=True)
    labels = torch.tensor([0, 8, 3, 3, 1], device=device)
    stats = logit_statistics(logits, labels)
    before = logits.detach().clone()
    (stats.log_normalizer - stats.label_logit).sum().backward()
    expected = torch.softmax(before, -1) - torch.nn.functional.one_hot(labels, 9)
    assert_close(logits.grad, expected)
    assert torch.equal(logits.detach(), before)  # the backward's fp32 blocks are copies, even of fp32 logits


def test_the_copy_loss_with_extended_labels_is_the_mixtures_in_value_and_gradient(monkeypatch, device):
    """``teacher_forced_nll`` with ``model.copy_oov`` (labels past the vocabulary, which only copying gives) and
    blocks of one row: the value and every parameter's gradient of (1 - e) x the whole mixture's NLL + e x the
    generator's uniform cross-entropy, as the loss was defined before it read the statistics."""
    monkeypatch.setattr(module, "BLOCK_ELEMENTS", 1)
    torch.manual_seed(0)
    model = HierSum(tiny_config(copy_attention=True, copy_oov=True), vocab_size=COPY_VOCAB, pad_id=PAD, bos_id=BOS,
                    eos_id=EOS, unk_id=UNK).to(device)
    batch = hide_copied_words(*copy_task_batch(torch.Generator().manual_seed(1), 6), share=0.5,
                              generator=torch.Generator().manual_seed(2))
    src, mask, tgt_in, labels = (tensor.to(device) for tensor in batch)
    padding = torch.arange(labels.size(1), device=device).ge(7) & torch.arange(6, device=device).lt(2).unsqueeze(1)
    labels = labels.masked_fill(padding, -100)  # the last two positions of the first two rows
    assert labels.ge(COPY_VOCAB).any() and labels.eq(-100).any()  # the guard: extended labels and padding

    def expected_loss() -> torch.Tensor:
        out = model(src, mask, tgt_in)
        real = labels.ne(-100)
        nll = -out.log_probs.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)[real]
        uniform = -out.logits.float().log_softmax(-1).mean(-1)[real]
        return (0.9 * nll + 0.1 * uniform).mean()

    losses, grads = [], []
    for loss_fn in (lambda: teacher_forced_nll(model(src, mask, tgt_in), labels, 0.1), expected_loss):
        model.zero_grad()
        loss = loss_fn()
        loss.backward()
        losses.append(loss.detach())
        grads.append([p.grad.clone() for p in model.parameters() if p.grad is not None])
    assert_close(losses[0], losses[1])
    assert len(grads[0]) == len(grads[1]) > 0
    for ours, theirs in zip(*grads, strict=True):
        assert_close(ours, theirs)
