"""Throughput and MFU in every run: the Throughput callback logs examples/s, real tokens/s (padding not
counted), the model's FLOP/s on the real tokens and MFU against the measured CPU roof; the report shows them, with
the peak and its source; an MFU above 100% is never logged; a run on a busy CPU says that its MFU measured its
share of the CPU."""

from __future__ import annotations

import csv
import json
import logging
import os
import platform

import pytest
import torch

from hiersum.commands.train import train
from hiersum.data.schema import Batch
from hiersum.training.callbacks import batch_examples, batch_real_tokens


def test_the_real_tokens_of_a_batch_leave_the_padding_out():
    src_mask = torch.tensor([[[True, True, False], [True, False, False]]])  # (B=1, P=2, T=3): 3 real
    tgt_mask = torch.tensor([[True, True, True, False]])  # 3 real
    batch = Batch(ids=["a"], src=torch.zeros(1, 2, 3, dtype=torch.long), src_mask=src_mask,
                  tgt_in=torch.zeros(1, 4, dtype=torch.long), tgt_out=torch.zeros(1, 4, dtype=torch.long),
                  tgt_mask=tgt_mask, references=[["r"]], sources=[])
    assert (batch_examples(batch), batch_real_tokens(batch)) == (1, 6)


def test_a_run_logs_its_throughput_and_mfu_and_the_report_shows_them(tiny_cfg, tmp_path, device):
    train(tiny_cfg("trainer.max_epochs=2", "trainer.log_every_n_steps=1", "callbacks.throughput.window_size=2",
                   "data.limit_eval_examples=2", "logger=csv"))
    with open(tmp_path / "run" / "csv" / "metrics.csv", newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row.get("train/device/mfu")]
    assert rows, "no throughput logged"
    for row in rows:
        assert float(row["train/device/items_per_sec"]) > float(row["train/device/samples_per_sec"]) > 0
        assert 0 < float(row["train/device/mfu"]) < 1
        # the FLOP/s logged are the model's FLOPs on the real tokens over the time: MFU times the roof
        assert float(row["train/device/flops_per_sec"]) > 0
    report = (tmp_path / "run" / "report.md").read_text()
    assert "Throughput of the training steps" in report and "- MFU: " in report and "- real tokens/s: " in report
    peak = json.loads((tmp_path / "run" / "metrics.json").read_text())["mfu_peak"]
    if device.type == "cuda":  # the GPU's data sheet
        assert peak["source"].startswith(f"data sheet: {torch.cuda.get_device_name(device)}")
    else:  # the CPU roof, measured once and cached
        assert platform.node() in peak["source"] and "cached in" in peak["source"]
    assert f"- MFU's peak: {peak['gflops']:,.1f} GFLOP/s per device ({peak['source']})" in report
    for row in rows:  # MFU is the logged FLOP/s over that peak
        mfu = float(row["train/device/flops_per_sec"]) / (peak["gflops"] * 1e9)
        assert float(row["train/device/mfu"]) == pytest.approx(mfu, rel=1e-2)


def test_a_peak_below_what_the_run_reaches_logs_no_mfu_and_says_why(tiny_cfg, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="hiersum"):
        train(tiny_cfg("trainer.max_steps=4", "trainer.log_every_n_steps=1", "callbacks.throughput.window_size=2",
                       "callbacks.throughput.available_flops=1000", "eval_split=null", "logger=csv"))
    with open(tmp_path / "run" / "csv" / "metrics.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert any(row.get("train/device/flops_per_sec") for row in rows)  # the throughput is logged
    assert not any(row.get("train/device/mfu") for row in rows)  # its MFU (far above 100%) is not
    warnings = [record.getMessage() for record in caplog.records if "no MFU logged" in record.getMessage()]
    assert len(warnings) == 1 and "callbacks.throughput.available_flops" in warnings[0]


CORES = float(os.cpu_count() or 1)


@pytest.mark.parametrize(("load", "warned"), [(0.0, False), (CORES + 0.1, False), (CORES + 1, True)])
def test_a_run_on_a_busy_cpu_says_its_mfu_measured_its_share(tiny_cfg, caplog, monkeypatch, device, load, warned):
    if device.type != "cpu":
        pytest.skip("the load average is read on a CPU run only")
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    with caplog.at_level(logging.WARNING, logger="hiersum"):
        train(tiny_cfg("trainer.max_steps=4", "trainer.log_every_n_steps=1", "callbacks.throughput.window_size=2",
                       "eval_split=null", "logger=csv"))
    warnings = [record.getMessage() for record in caplog.records if "the machine was busy" in record.getMessage()]
    assert len(warnings) == int(warned)
    if warned:
        assert f"median load average {load:.1f} on {os.cpu_count()} cores" in warnings[0]
    told = [record.getMessage() for record in caplog.records if "the machine is busy" in record.getMessage()]
    assert len(told) == int(warned)  # told at once too, and once


@pytest.mark.parametrize(("loads", "told"), [
    ([CORES + 2, CORES + 2, CORES, CORES, CORES, CORES], False),  # the preparation before the first step, fading
    ([CORES, CORES + 1, CORES + 1.5, CORES + 2, CORES + 2, CORES + 2], True),
])
def test_a_run_on_a_busy_cpu_is_told_while_it_trains(tiny_cfg, caplog, monkeypatch, device, loads, told):
    if device.type != "cpu":
        pytest.skip("the load average is read on a CPU run only")
    readings = iter(loads + [loads[-1]] * 100)
    monkeypatch.setattr(os, "getloadavg", lambda: (next(readings),) * 3)
    with caplog.at_level(logging.INFO, logger="hiersum"):
        train(tiny_cfg("trainer.max_steps=6", "trainer.log_every_n_steps=1", "callbacks.throughput.window_size=2",
                       "eval_split=null", "logger=csv"))
    messages = [record.getMessage() for record in caplog.records]
    busy = [index for index, message in enumerate(messages) if "the machine is busy" in message]
    assert len(busy) == int(told)
    if told:  # with the three loads that made it, before the run ends
        assert f"load average {CORES + 1:.1f} / {CORES + 1.5:.1f} / {CORES + 2:.1f} on" in messages[busy[0]]
        assert "OMP_NUM_THREADS=1" in messages[busy[0]]
        ended = [index for index, message in enumerate(messages) if "the machine was busy" in message]
        assert ended and busy[0] < ended[0]
