"""``hiersum summarize`` (alias ``hiersum-summarize``): summarize records with a checkpoint, resumably.

The entry point: Hydra composes ``conf/summarize.yaml`` with the command line, then
:func:`hiersum.commands.summarize.summarize` does the work (imported when the task starts, so that ``--help``
answers at once). ``hiersum summarize --help`` describes the action (``conf/hydra/help/summarize.yaml``).
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from hiersum.cli.common import CONFIG_DIR, EXIT_RECORD_ERRORS, run_entry_point, task
from hiersum.cli.overrides import given_decode_fields

PROG = "hiersum-summarize"


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="summarize")
def _run(cfg: DictConfig) -> None:
    with task(PROG):
        from hiersum.commands.summarize import summarize

        result = summarize(cfg, given_decode_fields())
    if result.errors:
        sys.exit(EXIT_RECORD_ERRORS)


def main(argv: list[str] | None = None, *, prog: str = PROG) -> None:
    """Run the action on ``argv`` (default: the process's command line) as command ``prog``."""
    run_entry_point(_run, prog, argv, config_name="summarize")


if __name__ == "__main__":
    main()
