"""``hiersum rank`` (alias ``hiersum-rank``): rank the paragraphs of raw multi-document records, resumably.

:func:`run` is the action's function (:data:`hiersum.cli.actions.ACTIONS`): Hydra has composed ``conf/rank.yaml``
with the command line, :func:`hiersum.commands.rank.rank` does the work (imported when the task starts, so that
``--help`` answers at once). ``hiersum rank --help`` describes the action (``conf/hydra/help/rank.yaml``).
"""

from __future__ import annotations

import sys

from omegaconf import DictConfig

from hiersum.cli.common import EXIT_RECORD_ERRORS


def run(cfg: DictConfig) -> None:
    """Rank on the composed config; exit :data:`EXIT_RECORD_ERRORS` when some records were refused."""
    from hiersum.commands.rank import rank

    result = rank(cfg)
    if result.errors:
        sys.exit(EXIT_RECORD_ERRORS)
