"""``hiersum evaluate`` (alias ``hiersum-evaluate``): score a split, decoding it with a checkpoint or reading
given predictions.

The entry point: Hydra composes ``conf/evaluate.yaml`` with the command line, then
:func:`hiersum.commands.evaluate.evaluate` does the work (imported when the task starts, so that ``--help``
answers at once). ``hiersum evaluate --help`` describes the action (``conf/hydra/help/evaluate.yaml``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import fields

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig

from hiersum.cli.common import CONFIG_DIR, lazy_attributes, run_entry_point, task

PROG = "hiersum-evaluate"

__getattr__ = lazy_attributes("hiersum.commands.evaluate", "evaluate")


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="evaluate")
def _run(cfg: DictConfig) -> None:
    with task(PROG):
        from hiersum.commands.evaluate import evaluate
        from hiersum.config import DecodeConfig

        overrides = HydraConfig.get().overrides.task
        decode_fields = {field.name for field in fields(DecodeConfig)}
        evaluate(cfg, given_data_fields(overrides), given_fields(overrides, "decode", preset=decode_fields))


def given_fields(overrides: Sequence[str], group: str, *, preset: Collection[str]) -> frozenset[str]:
    """The fields of ``group`` a command line sets (``data.max_paragraphs=40``, ``+data.x=``, ``++data.x=``), read by
    Hydra's own override parser; choosing the group's preset (``data=scitldr``) sets ``preset``."""
    parsed = OverridesParser.create().parse_overrides(list(overrides))
    keys = [override.key_or_group.split(".") for override in parsed]
    chosen = set(preset) if [group] in keys else set()
    return frozenset(chosen | {key[1] for key in keys if len(key) == 2 and key[0] == group})


def given_data_fields(overrides: Sequence[str]) -> frozenset[str]:
    """The ``data`` fields a command line sets (:func:`given_fields`); a preset (``data=scitldr``) gives the
    ``format``."""
    return given_fields(overrides, "data", preset={"format"})


def main(argv: list[str] | None = None, *, prog: str = PROG) -> None:
    """Run the action on ``argv`` (default: the process's command line) as command ``prog``."""
    run_entry_point(_run, prog, argv, config_name="evaluate")


if __name__ == "__main__":
    main()
