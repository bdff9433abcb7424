"""``hiersum evaluate-selection`` (alias ``hiersum-evaluate-selection``): how much of the references each
paragraph selection keeps.

The entry point: Hydra composes ``conf/evaluate_selection.yaml`` with the command line, then
:func:`hiersum.commands.evaluate_selection.evaluate_selection_command` does the work (imported when the task
starts, so that ``--help`` answers at once). ``hiersum evaluate-selection --help`` describes the action
(``conf/hydra/help/evaluate_selection.yaml``).
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from hiersum.cli.common import CONFIG_DIR, run_entry_point, task

PROG = "hiersum-evaluate-selection"


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="evaluate_selection")
def _run(cfg: DictConfig) -> None:
    with task(PROG):
        from hiersum.commands.evaluate_selection import evaluate_selection_command

        evaluate_selection_command(cfg)


def main(argv: list[str] | None = None, *, prog: str = PROG) -> None:
    """Run the action on ``argv`` (default: the process's command line) as command ``prog``."""
    run_entry_point(_run, prog, argv, config_name="evaluate_selection")


if __name__ == "__main__":
    main()
