"""``hiersum train-ranker`` (alias ``hiersum-train-ranker``): train the paragraph ranker of Liu & Lapata (2019).

The entry point: Hydra composes ``conf/train_ranker.yaml`` with the command line, then
:func:`hiersum.commands.train_ranker.train_ranker` does the work (imported when the task starts, so that
``--help`` answers at once). ``hiersum train-ranker --help`` describes the action
(``conf/hydra/help/train_ranker.yaml``).
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from hiersum.cli.common import CONFIG_DIR, run_entry_point, task

PROG = "hiersum-train-ranker"


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="train_ranker")
def _run(cfg: DictConfig) -> None:
    with task(PROG):
        from hiersum.commands.train_ranker import train_ranker

        train_ranker(cfg)


def main(argv: list[str] | None = None, *, prog: str = PROG) -> None:
    """Run the action on ``argv`` (default: the process's command line) as command ``prog``."""
    run_entry_point(_run, prog, argv, config_name="train_ranker")


if __name__ == "__main__":
    main()
