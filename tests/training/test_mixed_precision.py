"""bf16 mixed precision on the tiny model against fp32 (on ``HIERSUM_TEST_DEVICE``, the CPU by default): a training
step under Lightning's ``bf16-mixed`` plugin (what ``trainer.precision=bf16-mixed`` runs: autocast to bfloat16,
fp32 weights and gradients) and a beam search under the inference path's bf16 autocast (``summarize
precision=bf16``).

Tolerances, from what bfloat16's 8-bit mantissa (relative rounding 2^-8 = 0.4%) gives on this model: the loss
within 1% (measured: 0.04%), each parameter's gradient norm within 5% (measured: at most 1.4%, the
attention biases' small gradients) and the total gradient norm within 1% (measured: 0.06%); the decode gives
the same tokens on at least 3 of the 4 rows (measured: all 4) and, where the tokens agree, scores within 0.05
(log-probability; measured: at most 0.01). The decode runs on a model first fitted for a few steps to the batch:
a random model's next-token distribution is nearly flat, so its beams say nothing about rounding."""

from __future__ import annotations

import contextlib
import copy

import pytest
import torch
from pytorch_lightning.plugins.precision import MixedPrecision

from hiersum.data.schema import IGNORE_INDEX
from hiersum.decoding.generation import GenerationOptions, generate
from hiersum.inference import autocast
from hiersum.model import HierSum
from hiersum.model.cache import SelfAttentionCache, write_key_value_at
from hiersum.model.copy_attention import CopyAttention
from hiersum.model.layers import KeyValue
from hiersum.model.pooling import MultiHeadPooling
from hiersum.training.module import label_smoothed_nll
from tests.helpers.device import require_device
from tests.helpers.model import PAD, make_model
from tests.model.test_packed_encoder import ragged_batch

pytestmark = pytest.mark.slow


def batch(device: torch.device):
    src, mask, tgt = (t.to(device) for t in ragged_batch(0, B=4, P=5, T=12))
    return src, mask, tgt, tgt.roll(-1, 1).masked_fill(tgt.eq(PAD), IGNORE_INDEX)


def step(model: HierSum, batch, context: contextlib.AbstractContextManager) -> tuple[float, dict[str, float]]:
    """The loss of one training step and each parameter's gradient norm (the backward outside autocast, as the
    precision plugin runs it)."""
    src, mask, tgt, labels = batch
    model.zero_grad(set_to_none=True)
    with context:
        loss = label_smoothed_nll(model(src, mask, tgt).logits, labels, 0.1)
    loss.backward()
    grads = {name: float(p.grad.norm()) for name, p in model.named_parameters() if p.grad is not None}
    return float(loss.detach()), grads


@pytest.mark.parametrize("copy_attention", [False, True], ids=["plain", "copy"])
def test_a_bf16_mixed_training_step_matches_fp32(copy_attention):
    device = require_device()
    data = batch(device)
    fp32 = make_model(copy_attention=copy_attention).train().to(device)
    bf16 = copy.deepcopy(fp32)
    loss, grads = step(fp32, data, contextlib.nullcontext())
    plugin = MixedPrecision("bf16-mixed", device.type)
    bf16_loss, bf16_grads = step(bf16, data, plugin.forward_context())
    assert all(p.dtype == torch.float32 and p.grad.dtype == torch.float32 for p in bf16.parameters()
               if p.grad is not None)
    assert bf16_loss == pytest.approx(loss, rel=1e-2)
    assert bf16_loss != loss  # autocast did act: bfloat16 rounding shows in the loss
    assert grads.keys() == bf16_grads.keys()
    for name, norm in grads.items():
        if norm > 1e-6:  # not the keys' biases: zero up to rounding
            assert bf16_grads[name] == pytest.approx(norm, rel=5e-2), name
    total = sum(n * n for n in grads.values()) ** 0.5
    assert sum(n * n for n in bf16_grads.values()) ** 0.5 == pytest.approx(total, rel=1e-2)


def fitted_model(device: torch.device, data, steps: int = 25, **changes) -> HierSum:
    """The tiny model after ``steps`` Adam steps on the batch (fp32): peaked next-token distributions."""
    src, mask, tgt, labels = data
    model = make_model(**changes).train().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        optimizer.zero_grad()
        label_smoothed_nll(model(src, mask, tgt).logits, labels, 0.0).backward()
        optimizer.step()
    return model.eval()


@pytest.mark.parametrize("copy_attention", [False, True], ids=["plain", "copy"])
def test_a_bf16_decode_matches_fp32(copy_attention):
    device = require_device()
    data = batch(device)
    model = fitted_model(device, data, copy_attention=copy_attention)
    src, mask = data[:2]
    options = GenerationOptions(beam_size=3, max_length=8, min_length=2)
    with torch.no_grad():
        fp32 = generate(model, src, mask, options)
        with autocast(device, "bf16"):
            bf16 = generate(model, src, mask, options)
    assert len({tuple(s) for s in fp32.sequences}) > 1, fp32.sequences  # the rows differ: the source matters
    same = [a == b for a, b in zip(fp32.sequences, bf16.sequences, strict=True)]
    assert sum(same) >= 3, (fp32.sequences, bf16.sequences)
    for agree, a, b in zip(same, fp32.scores, bf16.scores, strict=True):
        if agree:
            assert b == pytest.approx(a, abs=0.05)
    assert bf16.scores != fp32.scores  # autocast did act


def test_pooling_sums_fp32_weights_with_bf16_values_as_cuda_autocast_gives_them():
    """Under CUDA autocast ``exp`` runs in fp32 and ``linear`` in bf16, so the pooling's weights and values differ in
    dtype (a CPU's autocast keeps both in bf16: only a GPU run showed it). The weighted sum takes the wider dtype
    and equals the sum of the fp32 values within bf16 rounding."""
    torch.manual_seed(0)
    pooling = MultiHeadPooling(8, heads=2, dropout=0.0)
    x = torch.randn(5, 8)  # (N, D): rows 0-2 paragraph 0, rows 3-4 paragraph 1
    segment = torch.tensor([0, 0, 0, 1, 1])
    expected = pooling(x, segment, 2).vectors  # (R, H, E)
    pooling.value.register_forward_hook(lambda module, inputs, values: values.to(torch.bfloat16))
    mixed = pooling(x, segment, 2).vectors
    assert mixed.dtype == torch.float32
    torch.testing.assert_close(mixed, expected, rtol=1e-2, atol=1e-2)


def test_the_compiled_steps_cache_takes_bf16_keys_into_buffers_made_like_an_fp32_memory():
    """The decoder's cache is allocated like the encoder's memory, which CUDA autocast leaves in fp32 (its last
    op is a layer norm), while the step's projected keys and values are bf16: the static step's write converts
    them (``index_copy_`` would refuse two dtypes)."""
    memory = torch.zeros(2, 3, 8)  # (N, M, D) fp32
    cache = SelfAttentionCache.allocate(2, layers=1, heads=2, head_dim=4, capacity=5, like=memory)
    keys, values = (torch.randn(2, 2, 1, 4).to(torch.bfloat16) for _ in range(2))  # (N, H, 1, E)
    stored = write_key_value_at(cache.buffers[0], torch.tensor([3]), KeyValue(keys, values))
    assert stored.keys.dtype == torch.float32
    assert torch.equal(stored.keys[:, :, 3:4], keys.float()) and torch.equal(stored.values[:, :, 3:4], values.float())


@pytest.mark.parametrize("weights", [torch.float32, torch.bfloat16], ids=["autocast", "bf16-weights"])
def test_the_copy_mixture_is_an_fp32_distribution_whatever_dtypes_it_is_given(weights):
    """Under CUDA autocast the decoder's final states and the memory are fp32 (layer norms) and the logits and
    projections bf16; the embeddings fp32 (a CPU's autocast gives other mixtures; bf16-true weights give bf16
    everywhere). The copy attention casts what it mixes (``scatter_add_`` takes one dtype): an fp32 distribution."""
    torch.manual_seed(0)
    attention = CopyAttention(8).to(weights)
    memory = torch.randn(2, 3, 8).to(weights)  # (B', M, D)
    ids = torch.tensor([[9, 11, 9], [12, 13, 0]])  # (B', M); the last position of entry 1 is padding
    mask = torch.tensor([[True, True, True], [True, True, False]])  # (B', M)
    states, inputs = torch.randn(4, 1, 8).to(weights), torch.randn(4, 1, 8).to(weights)  # 2 beams per entry
    logits = torch.randn(4, 1, 16).to(torch.bfloat16)  # (N, L, V)
    context = torch.autocast("cpu", torch.bfloat16) if weights == torch.float32 else contextlib.nullcontext()
    with context:
        out = attention(states, inputs, logits, attention.init_memory(memory, ids, mask))
    log_probs = out.log_probs()  # (N, L, V)
    assert log_probs.dtype == torch.float32 and torch.isfinite(log_probs).all()
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(4, 1))
    assert torch.all(out.attention[2:, :, 2] == 0)  # no mass on entry 1's padding

