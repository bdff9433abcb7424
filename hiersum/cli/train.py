"""``hiersum train`` (alias ``hiersum-train``): fit the hierarchical summarizer, then decode and score the test
split.

The entry point: Hydra composes ``conf/train.yaml`` with the command line, then
:func:`hiersum.commands.train.train` does the work (imported when the task starts, so that ``--help`` answers
at once). ``hiersum train --help`` describes the action (``conf/hydra/help/train.yaml``).
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from hiersum.cli.common import CONFIG_DIR, run_entry_point, task
from hiersum.errors import TrainingDiverged

PROG = "hiersum-train"
EXIT_DIVERGED = 1
"""Exit status when the divergence guard stopped training (:class:`hiersum.errors.TrainingDiverged`)."""


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="train")
def _run(cfg: DictConfig) -> None:
    with task(PROG):
        from hiersum.commands.train import train

        try:
            train(cfg)
        except TrainingDiverged as error:  # one line per run, from rank 0
            if error.rank == 0:
                print(f"{PROG}: {error}", file=sys.stderr)
            sys.exit(EXIT_DIVERGED)


def main(argv: list[str] | None = None, *, prog: str = PROG) -> None:
    """Run the action on ``argv`` (default: the process's command line) as command ``prog``."""
    run_entry_point(_run, prog, argv, config_name="train")


if __name__ == "__main__":
    main()
