"""scripts/plot_learning_curve.py puts each validation at the minutes of training its step was reached."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "plot_learning_curve.py"
# a Lightning CSV log as a run writes it: throughput rows (train/time, cumulative seconds), validation rows
LOG = """epoch,step,train/time,train/loss,val/loss,val/rougeL
0,99,120.0,5.0,,
0,199,240.0,4.0,,
0,249,,,3.5,12.5
0,299,360.0,3.0,,
1,399,480.0,2.5,3.0,20.0
"""


def test_validations_are_placed_at_their_steps_minutes_and_a_png_is_written(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "csv").mkdir(parents=True)
    (run / "csv" / "metrics.csv").write_text(LOG)
    output = tmp_path / "curve.png"
    out = subprocess.run([sys.executable, str(SCRIPT), str(run), "--label", "mine", "--output", str(output)],
                         capture_output=True, text=True, check=True, cwd=PROJECT_ROOT)
    (report,) = json.loads(out.stdout)
    assert report["label"] == "mine"
    assert report["points"] == [
        {"step": 249.0, "minutes": 5.0, "val/loss": 3.5, "val/rougeL": 12.5},  # halfway from 240 s to 360 s
        {"step": 399.0, "minutes": 8.0, "val/loss": 3.0, "val/rougeL": 20.0},
    ]
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_named_curves_against_steps_take_every_logged_step_of_those_columns(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "csv").mkdir(parents=True)
    (run / "csv" / "metrics.csv").write_text(LOG)
    output = tmp_path / "curve.png"
    out = subprocess.run([sys.executable, str(SCRIPT), str(run), "--x", "steps", "--curves", "train/loss", "val/loss",
                          "--output", str(output)], capture_output=True, text=True, check=True, cwd=PROJECT_ROOT)
    (report,) = json.loads(out.stdout)
    assert report["label"] == "run"
    assert [(point["step"], point.get("train/loss"), point.get("val/loss")) for point in report["points"]] == [
        (99.0, 5.0, None), (199.0, 4.0, None), (249.0, None, 3.5), (299.0, 3.0, None), (399.0, 2.5, 3.0)]
    assert all("val/rougeL" not in point for point in report["points"])
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
