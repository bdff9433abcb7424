"""``hiersum serve``: an HTTP summarization service with dynamic batching (LitServe).

The entry point: Hydra composes ``conf/serve.yaml`` with the command line, converted once into its typed
:class:`hiersum.config.ServeConfig`, then :func:`hiersum.serving.server.serve` does the work (imported when the
task starts, so that ``--help`` answers at once). ``hiersum serve --help`` describes the action
(``conf/hydra/help/serve.yaml``).
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from hiersum.cli.common import CONFIG_DIR, run_entry_point, task
from hiersum.cli.overrides import given_decode_fields
from hiersum.errors import UsageError

PROG = "hiersum-serve"


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="serve")
def _run(cfg: DictConfig) -> None:
    with task(PROG):
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


def main(argv: list[str] | None = None, *, prog: str = PROG) -> None:
    """Run the action on ``argv`` (default: the process's command line) as command ``prog``."""
    run_entry_point(_run, prog, argv, config_name="serve")


if __name__ == "__main__":
    main()
