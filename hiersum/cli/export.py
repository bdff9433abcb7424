"""``hiersum export`` (alias ``hiersum-export``): a checkpoint written as a model directory (safetensors + JSON).

The entry point: Hydra composes ``conf/export.yaml`` with the command line, then
:func:`hiersum.commands.export.export` does the work (imported when the task starts, so that ``--help``
answers at once). ``hiersum export --help`` describes the action (``conf/hydra/help/export.yaml``).
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from hiersum.cli.common import CONFIG_DIR, run_entry_point, task

PROG = "hiersum-export"


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="export")
def _run(cfg: DictConfig) -> None:
    with task(PROG):
        from hiersum.commands.export import export

        export(cfg)


def main(argv: list[str] | None = None, *, prog: str = PROG) -> None:
    """Run the action on ``argv`` (default: the process's command line) as command ``prog``."""
    run_entry_point(_run, prog, argv, config_name="export")


if __name__ == "__main__":
    main()
