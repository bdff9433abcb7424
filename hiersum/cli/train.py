"""``hiersum train`` (alias ``hiersum-train``): fit the hierarchical summarizer, then decode and score the test
split.

:func:`run` is the action's function (:data:`hiersum.cli.actions.ACTIONS`): Hydra has composed
``conf/train.yaml`` with the command line, :func:`hiersum.commands.train.train` does the work (imported when the
task starts, so that ``--help`` answers at once). ``hiersum train --help`` describes the action
(``conf/hydra/help/train.yaml``).
"""

from __future__ import annotations

import sys

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from hiersum.cli.overrides import experiment_model_fields, given_model_fields, given_tokenizer_fields
from hiersum.errors import TrainingDiverged

PROG = "hiersum-train"
EXIT_DIVERGED = 1
"""Exit status when the divergence guard stopped training (:class:`hiersum.errors.TrainingDiverged`)."""


def run(cfg: DictConfig) -> None:
    """Train on the composed config, told which model options the command line or the experiment file gave and
    which tokenizer options the command line gave (what a fine-tuning run, ``init_from``, compares with the trained
    network's); exit :data:`EXIT_DIVERGED` with one line when training diverged."""
    from hiersum.commands.train import train

    overrides = HydraConfig.get().overrides.task
    model_given = given_model_fields(overrides)
    if cfg.get("init_from") is not None:
        model_given |= experiment_model_fields()
    try:
        train(cfg, model_given, given_tokenizer_fields(overrides))
    except TrainingDiverged as error:  # one line per run, from rank 0
        if error.rank == 0:
            print(f"{PROG}: {error}", file=sys.stderr)
        sys.exit(EXIT_DIVERGED)
