"""scripts/bench_summarize.py on the session's tiny checkpoint: ``hiersum summarize`` of N records per case, every
summary written and forced to ``--steps`` tokens, the rates consistent with the time; a bad case refused in one
line; ``--time-limit`` skips the cases it leaves no time. And the readers of the GPU check's new parts, on the
shapes bench_train's CUDA profile and bench_summarize print (scripts/gpu_check.py)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers.paths import PROJECT_ROOT

SCRIPTS = PROJECT_ROOT / "scripts"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPTS / "bench_summarize.py"), *args], capture_output=True,
                          text=True, cwd=PROJECT_ROOT)


def test_each_case_summarizes_every_record_and_its_rates_follow_from_its_time(checkpoint: Path):
    done = bench("--checkpoint", str(checkpoint), "--records", "10", "--steps", "3", "--beam", "2",
                 "--cases", "2048:off", "8192:off")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["settings"] == {"records": 10, "device": "cpu", "precision": "32", "beam": 2, "steps": 3}
    assert [(r["batch_tokens"], r["compile_step"]) for r in report["results"]] == [(2048, False), (8192, False)]
    assert report["skipped"] == []
    for result in report["results"]:
        assert result["model"] == "given" and result["records"] == 10
        assert result["records_per_s"] == pytest.approx(10 / result["seconds"], abs=0.06)
        assert result["tokens_per_s"] == pytest.approx(30 / result["seconds"], abs=0.06)
        assert result["startup_seconds"] > 0 and result["peak_memory_mb"] > 100
        net = result["seconds"] - result["startup_seconds"]
        assert result["net_records_per_s"] == (pytest.approx(10 / net, rel=0.02) if net > 0 else None)
    # one start-up run per compile setting: the two eager cases share it
    assert len({r["startup_seconds"] for r in report["results"]}) == 1


def test_a_time_limit_skips_the_cases_it_leaves_no_time_and_a_bad_case_is_refused(checkpoint: Path):
    done = bench("--checkpoint", str(checkpoint), "--records", "4", "--steps", "2", "--beam", "1",
                 "--cases", "4096:off", "4096:on", "--time-limit", "0")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["results"] == []
    assert report["skipped"] == [{"model": "given", "batch_tokens": 4096, "compile_step": False},
                                 {"model": "given", "batch_tokens": 4096, "compile_step": True}]
    refused = bench("--cases", "4096:maybe")
    assert refused.returncode == 2
    assert "a case is BUDGET:off or BUDGET:on (e.g. 8192:off), got '4096:maybe'" in refused.stderr


def test_the_records_are_the_sample_test_split_repeated_with_ids_of_their_own(tmp_path: Path):
    bench_summarize = load("bench_summarize")
    bench_summarize.write_records(tmp_path / "records.jsonl", 450)
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    sample = [json.loads(line) for line in bench_summarize.SAMPLE_TEST.read_text().splitlines()]
    assert len(records) == 450 and len({r["id"] for r in records}) == 450
    assert [r["documents"] for r in records[:len(sample)]] == [r["documents"] for r in sample]
    assert records[len(sample)]["documents"] == sample[0]["documents"]


def kernel(name: str, microseconds: float, calls: int = 1) -> SimpleNamespace:
    return SimpleNamespace(key=name, self_device_time_total=microseconds, count=calls)


def test_the_cuda_profile_gives_the_gemm_share_and_the_kernels_by_gpu_time():
    bench_train = load("bench_train")
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


def test_the_gpu_checks_readers_of_the_summarize_and_profile_parts():
    gpu_check = load("gpu_check")
    summarize_output = json.dumps({"settings": {}, "skipped": [{"model": "small"}], "results": [
        {"model": "paper", "batch_tokens": 16384, "compile_step": True, "records_per_s": 33.9, "tokens_per_s": 2031.1,
         "net_records_per_s": 42.4, "net_tokens_per_s": 2541.3, "startup_seconds": 11.86, "seconds": 59.1}]})
    figures = gpu_check._bench_summarize_figures(None, ["progress\n" + summarize_output])
    assert figures == {"paper/16384/graphs": {"records_per_s": 33.9, "tokens_per_s": 2031.1, "net_records_per_s": 42.4,
                                              "net_tokens_per_s": 2541.3, "startup_seconds": 11.86},
                       "skipped": [{"model": "small"}]}
    implementation = {"mfu": 0.0065, "src_tokens_per_s": 110193.1, "kernel_ms": 72.7, "gemm_time_share": 0.18,
                      "top_kernels": [{"name": "k", "ms": 1.0, "share": 0.1, "calls": 3}], "seconds": 0.36}
    profile_output = json.dumps({"results": [{"model": "paper", "case": "multinews", "padded": implementation,
                                              "packed": implementation}]})
    figures = gpu_check._profile_figures(None, [profile_output])
    assert set(figures) == {"paper/multinews/padded", "paper/multinews/packed"}
    assert figures["paper/multinews/packed"] == {key: value for key, value in implementation.items()
                                                 if key != "seconds"}
