"""``hiersum serve``: an HTTP summarization service with dynamic batching (LitServe).

:func:`run` is the action's function (:data:`hiersum.cli.actions.ACTIONS`): Hydra has composed
``conf/serve.yaml`` with the command line, converted once into its typed :class:`hiersum.config.ServeConfig`,
then :func:`hiersum.serving.server.serve` does the work (imported when the task starts, so that ``--help``
answers at once). ``hiersum serve --help`` describes the action (``conf/hydra/help/serve.yaml``).
"""

from __future__ import annotations

from omegaconf import DictConfig

from hiersum.cli.overrides import given_decode_fields
from hiersum.errors import UsageError


def run(cfg: DictConfig) -> None:
    """Serve on the composed config; without LitServe, a usage error that says how to install it."""
    try:
        from hiersum.serving.server import USAGE, serve
    except ModuleNotFoundError as error:
        if error.name != "litserve":
            raise
        raise UsageError("hiersum serve needs LitServe, the serve extra: pip install -e '.[serve]' "
                         "(make installs it)") from None
    from hiersum.commands.composed import command_config
    from hiersum.config import ServeConfig

    serve(command_config(cfg, ServeConfig, usage=USAGE), given_decode_fields())
