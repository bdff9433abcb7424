"""A command refused as a usage error inside its task (Hydra has already made the run directory) leaves no run
directory behind, unless it named one that was there already: that one, and what it holds, stays."""

from __future__ import annotations

import pytest

from hiersum.cli.main import main

QUIET = ["hydra/job_logging=none", "hydra/hydra_logging=none"]


def refused_evaluate(run_dir, tmp_path) -> int:
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate", f"predictions={tmp_path / 'missing.jsonl'}", f"hydra.run.dir={run_dir}", *QUIET])
    return exit_info.value.code


def test_a_refused_command_leaves_no_run_directory(tmp_path, capsys):
    assert refused_evaluate(tmp_path / "run", tmp_path) == 2
    assert "predictions file not found" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_run_directory_that_was_there_stays_with_what_it_holds(tmp_path, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "metrics.json").write_text("{}", encoding="utf-8")
    assert refused_evaluate(run_dir, tmp_path) == 2
    assert (run_dir / "metrics.json").read_text(encoding="utf-8") == "{}"
    empty = tmp_path / "empty"
    empty.mkdir()  # named and there before, even with nothing in it: kept
    assert refused_evaluate(empty, tmp_path) == 2 and empty.is_dir()
