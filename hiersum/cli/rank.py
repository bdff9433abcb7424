"""``hiersum rank`` (alias ``hiersum-rank``): rank the paragraphs of raw multi-document records, resumably.

The entry point: Hydra composes ``conf/rank.yaml`` with the command line, then
:func:`hiersum.commands.rank.rank` does the work (imported when the task starts, so that ``--help`` answers at
once). ``hiersum rank --help`` describes the action (``conf/hydra/help/rank.yaml``).
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from hiersum.cli.common import CONFIG_DIR, EXIT_RECORD_ERRORS, run_entry_point, task

PROG = "hiersum-rank"


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="rank")
def _run(cfg: DictConfig) -> None:
    with task(PROG):
        from hiersum.commands.rank import rank

        result = rank(cfg)
    if result.errors:
        sys.exit(EXIT_RECORD_ERRORS)


def main(argv: list[str] | None = None, *, prog: str = PROG) -> None:
    """Run the action on ``argv`` (default: the process's command line) as command ``prog``."""
    run_entry_point(_run, prog, argv, config_name="rank")


if __name__ == "__main__":
    main()
