"""scripts/bench_real_step.py: the real training recipe's step profiled by operator, on the tiny model and the first
lines of the sample corpus, on the tests' device; a device it cannot run on refused; its grouping of the profiler's
operators into buckets."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from tests.helpers.config import TINY_OVERRIDES
from tests.helpers.scripts import load_script

FIELDS = {"overrides", "torch", "threads", "cpu", "date", "step_seconds", "step_flops", "peak_flops", "mfu",
          "train_ops", "train_groups", "val_ops", "val_groups", "val_step_seconds"}


def op(key: str, microseconds: float, calls: int = 1) -> SimpleNamespace:
    """What the grouping reads of a profiler event."""
    return SimpleNamespace(key=key, self_cpu_time_total=microseconds, count=calls)


@pytest.mark.slow
def test_the_report_has_the_step_time_its_mfu_and_where_the_time_goes(capsys, tiny_corpus: Path, tmp_path: Path,
                                                                       device: torch.device):
    capsys.readouterr()
    load_script("bench_real_step").main([*TINY_OVERRIDES, f"data.path={tiny_corpus}", "--work-dir", str(tmp_path),
                                         "--warmup", "1", "--steps", "1", "--val-batches", "1",
                                         "--device", str(device)])
    report = json.loads(capsys.readouterr().out)
    assert FIELDS <= set(report)
    assert report["device"] == str(device) and (report["gpu"] is None) == (device.type == "cpu")
    assert report["overrides"][-1] == f"data.path={tiny_corpus}" and report["threads"] == 1
    assert report["step_seconds"] > 0 and report["val_step_seconds"] > 0 and report["step_flops"] > 0
    assert 0 < report["mfu"] <= 1
    for groups in (report["train_groups"], report["val_groups"]):
        assert sum(group["share"] for group in groups.values()) == pytest.approx(1, abs=1e-6)
        assert groups["matrix_products"]["ms"] > 0 and groups["matrix_products"]["share"] > 0
    assert report["train_groups"]["optimizer"]["ms"] > 0 and report["val_groups"]["optimizer"]["ms"] == 0
    assert 0 < len(report["train_ops"]) <= 25
    assert {"name", "self_cpu_ms", "share", "calls"} == set(report["train_ops"][0])
    assert (tmp_path / "tokenizer").exists() and (tmp_path / "prepared").is_dir()  # reused by the next run


def test_a_device_it_cannot_run_on_is_refused_in_one_line(capsys):
    with pytest.raises(SystemExit) as stopped:
        load_script("bench_real_step").parse_args(["--device", "meta"])
    assert stopped.value.code == 2
    assert "--device meta: expected cpu, or cuda where torch sees a CUDA device" in capsys.readouterr().err


def test_each_operator_is_counted_in_its_bucket():
    bench = load_script("bench_real_step")
    buckets = {
        "matrix_products": ["aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::linear", "MmBackward0",
                            "autograd::engine::evaluate_function: AddmmBackward0"],
        "attention": ["aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention_for_cpu",
                      "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
                      "ScaledDotProductFlashAttentionForCpuBackward0"],
        "softmax": ["aten::_softmax", "aten::_log_softmax", "aten::_log_softmax_backward_data",
                    "aten::_softmax_backward_data", "LogSoftmaxBackward0"],
        "dropout": ["aten::dropout", "aten::native_dropout", "aten::native_dropout_backward", "aten::bernoulli_"],
        "scatter_gather_index": ["aten::scatter_add_", "aten::gather", "aten::index_select", "aten::index_put_",
                                 "aten::index", "aten::embedding_dense_backward", "IndexBackward0"],
        "optimizer": ["Optimizer.step#Adam.step", "Optimizer.step#Adam.step > aten::mul_",
                      "Optimizer.zero_grad#Adam.zero_grad", "aten::_foreach_addcdiv_",
                      f"{bench.GUARD} > aten::linalg_vector_norm"],
        "layer_norm": ["aten::layer_norm", "aten::native_layer_norm", "aten::native_layer_norm_backward",
                       "NativeLayerNormBackward0"],
        "copies": ["aten::copy_", "aten::_to_copy", "aten::cat", "aten::clone", "aten::contiguous", "CatBackward0"],
        "other": ["aten::mul_", "aten::add", "aten::fill_", "aten::empty", "aten::nll_loss", "aten::masked_fill_"],
    }
    assert set(buckets) == set(bench.GROUPS)
    for bucket, names in buckets.items():
        assert {name: bench.group_of(name) for name in names} == dict.fromkeys(names, bucket)
    # one event a bucket, the i-th taking i + 1 ms over 2 steps
    events = [op(names[0], 1000.0 * (i + 1)) for i, names in enumerate(buckets.values())]
    groups = bench.group_ops(events, steps=2)
    total = sum(range(1, len(buckets) + 1))
    for i, bucket in enumerate(buckets):
        assert groups[bucket]["ms"] == pytest.approx((i + 1) / 2)
        assert groups[bucket]["share"] == pytest.approx((i + 1) / total, abs=1e-4)
    assert sum(group["share"] for group in groups.values()) == pytest.approx(1, abs=1e-6)
    only_products = bench.group_ops([op("aten::mm", 5.0)])
    assert only_products["matrix_products"]["share"] == 1 and only_products["other"] == {"ms": 0.0, "share": 0.0}


def test_the_optimizer_s_operators_are_named_by_their_scope_and_the_top_ones_listed():
    bench = load_script("bench_real_step")
    step = SimpleNamespace(name="Optimizer.step#Adam.step", self_cpu_time_total=50.0, cpu_parent=None)
    inner = SimpleNamespace(name="aten::mul_", self_cpu_time_total=30.0, cpu_parent=step)
    innermost = SimpleNamespace(name="aten::empty", self_cpu_time_total=5.0, cpu_parent=inner)
    model = SimpleNamespace(name="aten::mul_", self_cpu_time_total=15.0, cpu_parent=None)
    totals = {total.key: (total.self_cpu_time_total, total.count)
              for total in bench.scoped_totals([step, inner, innermost, model, model])}
    assert totals == {"Optimizer.step#Adam.step": (50.0, 1), "Optimizer.step#Adam.step > aten::mul_": (30.0, 1),
                      "Optimizer.step#Adam.step > aten::empty": (5.0, 1), "aten::mul_": (30.0, 2)}
    table = bench.op_table([op("a", 3000.0, 4), op("b", 1000.0, 2), op("c", 500.0)], steps=2, top=2)
    assert table == [{"name": "a", "self_cpu_ms": 1.5, "share": round(3 / 4.5, 4), "calls": 2.0},
                     {"name": "b", "self_cpu_ms": 0.5, "share": round(1 / 4.5, 4), "calls": 1.0}]
