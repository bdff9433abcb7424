"""scripts/bench_train.py's CUDA profile summary (``--profile --device cuda``), on the kernel events the profiler
gives: the GPU's busy time, the share of matrix products in it, the kernels that take the most."""

from __future__ import annotations

from types import SimpleNamespace

from tests.helpers.scripts import load_script


def kernel(name: str, microseconds: float, calls: int = 1) -> SimpleNamespace:
    return SimpleNamespace(key=name, self_device_time_total=microseconds, count=calls)


def test_the_cuda_profile_gives_the_gemm_share_and_the_kernels_by_gpu_time():
    bench_train = load_script("bench_train")
    kernels = [kernel("void at::native::reduce_kernel<128>", 3000, 10), kernel("sm90_xmma_gemm_bf16bf16", 5000, 4),
               kernel("cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm>", 1000, 2),
               kernel("vectorized_layer_norm_kernel", 1000, 6)]
    summary = bench_train.kernel_summary(kernels)
    assert summary["kernel_ms"] == 10.0 and summary["gemm_time_share"] == 0.6
    assert [k["name"] for k in summary["top_kernels"]][:2] == ["sm90_xmma_gemm_bf16bf16",
                                                               "void at::native::reduce_kernel<128>"]
    assert summary["top_kernels"][0] == {"name": "sm90_xmma_gemm_bf16bf16", "ms": 5.0, "share": 0.5, "calls": 4}
    many = bench_train.kernel_summary([kernel(f"k{i}", i) for i in range(1, 30)])
    assert len(many["top_kernels"]) == bench_train.TOP_KERNELS and many["top_kernels"][0]["name"] == "k29"
