"""``hiersum prepare`` (alias ``hiersum-prepare``): tokenize the splits of a corpus once into the prepared-data
cache.

The entry point: Hydra composes ``conf/prepare.yaml`` with the command line, then
:func:`hiersum.commands.prepare.prepare` does the work (imported when the task starts, so that ``--help``
answers at once). ``hiersum prepare --help`` describes the action (``conf/hydra/help/prepare.yaml``).
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from hiersum.cli.common import CONFIG_DIR, run_entry_point, task

PROG = "hiersum-prepare"


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="prepare")
def _run(cfg: DictConfig) -> None:
    with task(PROG):
        from hiersum.commands.prepare import prepare

        prepare(cfg)


def main(argv: list[str] | None = None, *, prog: str = PROG) -> None:
    """Run the action on ``argv`` (default: the process's command line) as command ``prog``."""
    run_entry_point(_run, prog, argv, config_name="prepare")


if __name__ == "__main__":
    main()
