"""scripts/bench_copy_loss.py on a small output layer: every case timed, and the blocked statistics give the loss and
the weight gradient of autograd over the whole fp32 tensor, whatever the block size."""

from __future__ import annotations

import json

import pytest

from hiersum.training import logit_statistics
from tests.helpers.scripts import load_script


def test_every_block_size_gives_the_whole_tensors_loss_and_gradient(capsys):
    bench = load_script("bench_copy_loss")
    report = bench.main(["--tokens", "37", "--vocab", "50", "--width", "8", "--block-rows", "1", "5",
                         "--dtype", "float32", "--repeats", "2"])
    assert json.loads(capsys.readouterr().out) == report
    cases = report["cases"]
    assert set(cases) == {"whole_fp32", "blocks_of_1", "blocks_of_5", "default_blocks", "cross_entropy_plain_path"}
    assert logit_statistics.BLOCK_ELEMENTS == 1 << 20  # put back after the block-size cases
    whole = cases["whole_fp32"]
    for case in cases.values():
        assert case["ms"] > 0
        assert case["loss"] == pytest.approx(whole["loss"], rel=1e-5)
        assert case["grad_norm"] == pytest.approx(whole["grad_norm"], rel=1e-5)
