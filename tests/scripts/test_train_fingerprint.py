"""scripts/train_fingerprint.py: the same steps give the same fingerprint; other steps another, and --against
measures how far."""

from __future__ import annotations

import importlib.util

import pytest

from tests.helpers.paths import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "train_fingerprint.py"
TINY = ["--model", "tiny", "--batch-tokens", "512"]


def load_script():
    spec = importlib.util.spec_from_file_location("train_fingerprint", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_steps_kept_are_1_2_5_by_decade_and_the_last():
    saved_step = load_script().saved_step
    assert [step for step in range(1, 131) if saved_step(step, 130)] == [1, 2, 5, 10, 20, 50, 100, 130]


@pytest.mark.slow
def test_the_same_steps_give_the_same_fingerprint_and_others_differ(tmp_path, capsys):
    script = load_script()
    first = script.main([*TINY, "--steps", "3", "--threads", "1", "--save", str(tmp_path / "first.pt")])
    again = script.main([*TINY, "--steps", "3", "--threads", "1", "--against", str(tmp_path / "first.pt")])
    assert first["steps"] == 3 and len(first["losses"]) == 3 and first["threads"] == 1
    assert first["machine"]["cpu_count"] >= 1 and "cpu_flags" in first["machine"]
    assert again["weights_sha256"] == first["weights_sha256"] and again["losses"] == first["losses"]
    assert again["relative_difference"] == {"1": 0.0, "2": 0.0, "3": 0.0}

    # the schedule started at another step: the same batches, other updates
    other = script.main([*TINY, "--steps", "3", "--threads", "1", "--lr-offset", "0",
                         "--against", str(tmp_path / "first.pt")])
    assert other["losses"][0] == first["losses"][0]  # before any update
    assert other["weights_sha256"] != first["weights_sha256"]
    assert all(difference > 0 for difference in other["relative_difference"].values())
    assert capsys.readouterr().out.count("weights_sha256") == 3
