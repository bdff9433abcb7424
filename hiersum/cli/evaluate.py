"""``hiersum evaluate`` (alias ``hiersum-evaluate``): score a split, decoding it with a checkpoint or reading
given predictions.

The entry point: Hydra composes ``conf/evaluate.yaml`` with the command line, then
:func:`hiersum.commands.evaluate.evaluate` does the work (imported when the task starts, so that ``--help``
answers at once). ``hiersum evaluate --help`` describes the action (``conf/hydra/help/evaluate.yaml``).
"""

from __future__ import annotations

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from hiersum.cli.common import CONFIG_DIR, run_entry_point, task
from hiersum.cli.overrides import given_data_fields, given_decode_fields

PROG = "hiersum-evaluate"


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="evaluate")
def _run(cfg: DictConfig) -> None:
    with task(PROG):
        from hiersum.commands.evaluate import evaluate

        overrides = HydraConfig.get().overrides.task
        evaluate(cfg, given_data_fields(overrides), given_decode_fields(overrides))


def main(argv: list[str] | None = None, *, prog: str = PROG) -> None:
    """Run the action on ``argv`` (default: the process's command line) as command ``prog``."""
    run_entry_point(_run, prog, argv, config_name="evaluate")


if __name__ == "__main__":
    main()
