"""The kernels hiersum's attention may pick (:mod:`hiersum.model.attention_kernels`): on CUDA in half precision every
backend but cuDNN's (whose first call on each new shape costs ~140x a repeated one), restored after the call; in fp32
and on a CPU, PyTorch's own call, untouched. The model's attention goes through it."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

from hiersum.data.packing import PackedGrid
from hiersum.model import attention_kernels, layers
from hiersum.model.attention_kernels import attention
from tests.helpers.device import same_result
from tests.helpers.model import make_batch, make_model


def record_backends(monkeypatch) -> list[dict[str, bool]]:
    """The backends PyTorch allows at each call of ``scaled_dot_product_attention`` (the call itself still made)."""
    calls: list[dict[str, bool]] = []
    original = F.scaled_dot_product_attention

    def recording(*args, **kwargs):
        calls.append({"cudnn": torch.backends.cuda.cudnn_sdp_enabled(),
                      "flash": torch.backends.cuda.flash_sdp_enabled(),
                      "efficient": torch.backends.cuda.mem_efficient_sdp_enabled(),
                      "math": torch.backends.cuda.math_sdp_enabled()})
        return original(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", recording)
    return calls


ALL_ALLOWED = {"cudnn": True, "flash": True, "efficient": True, "math": True}
BUT_CUDNN = {"cudnn": False, "flash": True, "efficient": True, "math": True}


def allowed(device: torch.device, dtype: torch.dtype) -> dict[str, bool]:
    """What a call on ``device`` in ``dtype`` runs with: cuDNN left out for half precision on CUDA only."""
    return BUT_CUDNN if device.type == "cuda" and dtype in (torch.float16, torch.bfloat16) else ALL_ALLOWED


def ragged_inputs(device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """q, k, v [3, 2, 5, 4] and a key mask [3, 1, 1, 5] of 5, 2 and 1 real keys."""
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 2, 5, 4, generator=generator).to(device, dtype) for _ in range(3))
    mask = (torch.arange(5) < torch.tensor([5, 2, 1]).unsqueeze(-1)).view(3, 1, 1, 5).to(device)
    return q, k, v, mask


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_attention_is_pytorchs_with_the_backends_of_its_device(device, monkeypatch, dtype):
    q, k, v, mask = ragged_inputs(device, dtype)
    calls = record_backends(monkeypatch)
    got = attention(q, k, v, mask, 0.0)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # outside the module: PyTorch's defaults
    # on CUDA in bf16 the two may be different kernels: bf16's rounding apart
    kernels_may_differ = allowed(device, dtype) != ALL_ALLOWED
    torch.testing.assert_close(got, expected, **(dict(rtol=2e-2, atol=2e-2) if kernels_may_differ
                                                 else same_result(device)))
    assert calls == [allowed(device, dtype), ALL_ALLOWED]


@pytest.mark.parametrize(("dtype", "expected"), [(torch.bfloat16, BUT_CUDNN), (torch.float16, BUT_CUDNN),
                                                 (torch.float32, ALL_ALLOWED)])
def test_on_cuda_cudnns_attention_is_left_out_of_half_precision_for_the_call_only(monkeypatch, dtype, expected):
    """The CUDA branch on any machine: fake CUDA tensors (no kernel runs, so nothing needs a GPU)."""
    calls = record_backends(monkeypatch)
    with FakeTensorMode():
        q, k, v = (torch.empty(3, 2, 5, 4, device="cuda", dtype=dtype) for _ in range(3))
        out = attention(q, k, v, torch.ones(3, 1, 1, 5, dtype=torch.bool, device="cuda"), 0.1)
    assert out.shape == (3, 2, 5, 4) and out.is_cuda and out.dtype == dtype
    assert calls == [expected]
    assert torch.backends.cuda.cudnn_sdp_enabled()  # restored
    assert {backend.name for backend in attention_kernels.RAGGED_SHAPE_BACKENDS} == {
        "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH"}


@pytest.mark.parametrize("packed", [False, True])
def test_every_attention_of_the_model_goes_through_it(device, monkeypatch, packed):
    """Encoder (padded grid or packed buckets), inter-paragraph and decoder attention, under bf16 autocast as a
    bf16-mixed run: each call of PyTorch's function is one of the module's, with its device's backends."""
    model = make_model(device=device)
    src, src_mask, tgt_in = make_batch(device=device)
    query_dtypes = []

    def counted(*args):
        query_dtypes.append(args[0].dtype)
        return attention(*args)

    monkeypatch.setattr(layers, "attention", counted)
    calls = record_backends(monkeypatch)
    with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16):
        model(src, src_mask, tgt_in, layout=PackedGrid.from_mask(src_mask) if packed else None)
    assert len(calls) == len(query_dtypes) >= 3  # encoder, inter-paragraph, decoder self and cross
    assert torch.bfloat16 in query_dtypes
    assert calls == [allowed(device, dtype) for dtype in query_dtypes]


def test_the_cuda_branch_compiles_in_one_graph():
    """The compiled training step and the CUDA-graph decoding step (``fullgraph``) trace the backend choice
    (dynamo's ``sdpa_kernel``), traced here on fake CUDA tensors by dynamo's eager backend."""
    compiled = torch.compile(lambda q, mask: attention(q, q, q, mask, 0.0) * 2, backend="eager", fullgraph=True)
    with FakeTensorMode(allow_non_fake_inputs=True):
        out = compiled(torch.empty(3, 2, 5, 4, device="cuda", dtype=torch.bfloat16),
                       torch.ones(3, 1, 1, 5, dtype=torch.bool, device="cuda"))
    assert out.shape == (3, 2, 5, 4) and out.is_cuda


def test_a_cpus_bf16_attention_that_training_differentiates_runs_in_fp32():
    """Under CPU bf16 autocast with a gradient wanted: PyTorch's fp32 attention of the bf16 inputs, rounded to bf16
    (the bf16 flash-attention backward of a CPU is ~3x fp32's), and a gradient reaches the bf16 queries."""
    q, k, v, mask = ragged_inputs(torch.device("cpu"), torch.bfloat16)
    q.requires_grad_(True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = attention(q, k, v, mask, 0.0)
    expected = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask).to(torch.bfloat16)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    got.float().sum().backward()
    assert q.grad is not None and q.grad.dtype == torch.bfloat16 and q.grad.abs().sum() > 0


@pytest.mark.parametrize("wants_grad", [False, True])
def test_a_cpus_bf16_attention_without_a_gradient_stays_bf16(wants_grad):
    """Decoding (no_grad, or inputs that need none) keeps PyTorch's own bf16 call: the same summaries as before."""
    q, k, v, mask = ragged_inputs(torch.device("cpu"), torch.bfloat16)
    with torch.set_grad_enabled(wants_grad), torch.autocast("cpu", dtype=torch.bfloat16):
        got = attention(q, k, v, mask, 0.0)
    torch.testing.assert_close(got, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), rtol=0, atol=0)


def test_a_float_mask_is_cast_with_the_inputs():
    """An additive bf16 mask with fp32 attention: the mask is cast too (SDPA refuses mixed dtypes)."""
    q, k, v, mask = ragged_inputs(torch.device("cpu"), torch.bfloat16)
    additive = torch.zeros(mask.shape, dtype=torch.bfloat16).masked_fill(~mask, float("-inf"))
    q.requires_grad_(True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = attention(q, k, v, additive, 0.0)
    torch.testing.assert_close(got, attention(q.detach(), k, v, mask, 0.0).to(got.dtype), rtol=2e-2, atol=2e-2)


def test_as_on_a_gpu_a_cpus_bf16_training_attention_stays_bf16_inside_only():
    """The dry run's fake CPU tensors stand for a GPU's: inside the context their attention is PyTorch's bf16 call,
    after it fp32 again."""
    q, k, v, mask = ragged_inputs(torch.device("cpu"), torch.bfloat16)
    q.requires_grad_(True)
    bf16 = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    fp32 = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask).to(torch.bfloat16)
    assert not torch.equal(bf16, fp32)  # the two paths are told apart
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with attention_kernels.attention_as_on_a_gpu():
            inside = attention(q, k, v, mask, 0.0)
        after = attention(q, k, v, mask, 0.0)
    assert torch.equal(inside, bf16) and torch.equal(after, fp32)
