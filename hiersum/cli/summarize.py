"""``hiersum summarize`` (alias ``hiersum-summarize``): summarize records with a checkpoint, resumably.

:func:`run` is the action's function (:data:`hiersum.cli.actions.ACTIONS`): Hydra has composed
``conf/summarize.yaml`` with the command line, :func:`hiersum.commands.summarize.summarize` does the work
(imported when the task starts, so that ``--help`` answers at once). ``hiersum summarize --help`` describes the
action (``conf/hydra/help/summarize.yaml``).
"""

from __future__ import annotations

import sys

from omegaconf import DictConfig

from hiersum.cli.common import EXIT_RECORD_ERRORS
from hiersum.cli.overrides import given_decode_fields


def run(cfg: DictConfig) -> None:
    """Summarize on the composed config; exit :data:`EXIT_RECORD_ERRORS` when some records were refused."""
    from hiersum.commands.summarize import summarize

    result = summarize(cfg, given_decode_fields())
    if result.errors:
        sys.exit(EXIT_RECORD_ERRORS)
