"""``hiersum evaluate`` (alias ``hiersum-evaluate``): score a split, decoding it with a checkpoint or reading
given predictions.

:func:`run` is the action's function (:data:`hiersum.cli.actions.ACTIONS`): Hydra has composed
``conf/evaluate.yaml`` with the command line, :func:`hiersum.commands.evaluate.evaluate` does the work (imported
when the task starts, so that ``--help`` answers at once). ``hiersum evaluate --help`` describes the action
(``conf/hydra/help/evaluate.yaml``).
"""

from __future__ import annotations

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from hiersum.cli.overrides import given_data_fields, given_decode_fields


def run(cfg: DictConfig) -> None:
    """Evaluate on the composed config, told which data and decode options the command line gave."""
    from hiersum.commands.evaluate import evaluate

    overrides = HydraConfig.get().overrides.task
    evaluate(cfg, given_data_fields(overrides), given_decode_fields(overrides))
