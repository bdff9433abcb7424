"""The files an evaluation report writes in a run directory, by name: what a command checks against its inputs
before it runs. Apart from :mod:`hiersum.evaluation.report` (which imports the metrics, and with them rouge-score
and nltk: ~0.6 s of a start here), so that ``hiersum train`` reads them without that import on the ranks and runs
that score nothing."""

from __future__ import annotations

from pathlib import Path

from hiersum.data.corpus_splits import DATA_ERRORS

REPORT_FILES = {"metrics": "metrics.json", "report": "report.md", "html": "report.html",
                "predictions": "predictions.jsonl", "scores": "scores.csv"}
"""The files :func:`hiersum.evaluation.report.write_report` writes in a run directory, by the keys it returns them
under."""


def report_outputs(run_dir: str | Path) -> dict[str, Path]:
    """``{"report file NAME": path}`` for every file :func:`hiersum.evaluation.report.write_report` and the data
    stage (``data_errors.jsonl``) may write in ``run_dir``: what a command checks against its inputs."""
    names = [*REPORT_FILES.values(), DATA_ERRORS]
    return {f"report file {name}": Path(run_dir) / name for name in names}
