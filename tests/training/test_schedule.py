"""The Noam learning-rate schedule (hiersum.training.schedule)."""

import pytest

from hiersum.training.schedule import NoamSchedule


def test_noam_schedule_warms_up_linearly_then_decays_as_inverse_sqrt():
    schedule = NoamSchedule(lr=2.0, d_model=64, warmup_steps=100)
    peak = schedule(100)
    assert peak == pytest.approx(2.0 * 64**-0.5 * 100**-0.5)
    assert schedule(50) == pytest.approx(peak / 2)
    assert schedule(400) == pytest.approx(peak / 2)
    assert schedule(0) == schedule(1) > 0
