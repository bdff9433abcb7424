"""``hiersum-evaluate``: score a data split, decoding it with a checkpoint or reading given predictions.

Examples::

    hiersum-evaluate checkpoint=outputs/train/<run>/checkpoints/last.ckpt split=test
    hiersum-evaluate predictions=out.jsonl data=scitldr data.path=/data/scitldr-a split=dev
    hiersum-evaluate predictions=a.jsonl compare=b.jsonl data=multinews data.path=/data/mn split=validation

Writes ``metrics.json``, ``report.md``, ``report.html``, ``scores.csv`` and ``predictions.jsonl`` in
the run directory (:mod:`hiersum.evaluation.command`). Exit status 2 with a one-line message for a
usage error (both or neither of ``checkpoint`` and ``predictions``, a missing file, predictions that
do not match the split's ids).
"""

from __future__ import annotations

from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from hiersum.cli.common import CONFIG_DIR, run_entry_point, task

PROG = "hiersum-evaluate"


def evaluate(cfg: DictConfig, overrides: list[str] | None = None) -> dict[str, Any]:
    """Score ``cfg.split`` (checkpoint or predictions mode) and write the report; return the metrics
    (:func:`hiersum.evaluation.command.evaluate`; ``overrides``: the command line's, see
    :func:`~hiersum.evaluation.command.effective_data_config`)."""
    from hiersum.evaluation import command  # on use: an option Hydra refuses is reported without the metrics' imports

    return command.evaluate(cfg, overrides)


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="evaluate")
def _run(cfg: DictConfig) -> None:
    with task(PROG):
        evaluate(cfg, list(HydraConfig.get().overrides.task))


def main() -> None:
    run_entry_point(_run, PROG)


if __name__ == "__main__":
    main()
