"""What a command line gave: the fields of a config group its overrides set, read by Hydra's own override parser.

A checkpoint records the paragraph selection and the search settings of its training run; the commands that
decode with it (evaluate, summarize, serve) take those, except the fields the command line sets. A fine-tuning run
(``hiersum train init_from=``) takes the trained network's model settings the same way, except the fields the
command line or its experiment file sets (:func:`experiment_model_fields`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import fields

from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser


def given_fields(overrides: Sequence[str], group: str, *, preset: Collection[str]) -> frozenset[str]:
    """The fields of ``group`` a command line sets (``data.max_paragraphs=40``, ``+data.x=``, ``++data.x=``), read by
    Hydra's own override parser; choosing the group's preset (``data=scitldr``) sets ``preset``."""
    parsed = OverridesParser.create().parse_overrides(list(overrides))
    keys = [override.key_or_group.split(".") for override in parsed]
    chosen = set(preset) if [group] in keys else set()
    return frozenset(chosen | {key[1] for key in keys if len(key) == 2 and key[0] == group})


def given_data_fields(overrides: Sequence[str]) -> frozenset[str]:
    """The ``data`` fields a command line sets (:func:`given_fields`); a preset (``data=scitldr``) gives the
    ``format`` and the line-pair layout (:data:`hiersum.config.LINE_LAYOUT_FIELDS`: ``data=neus`` its separators)."""
    from hiersum.config import LINE_LAYOUT_FIELDS  # the config package loads when the task starts, not for --help

    return given_fields(overrides, "data", preset={"format", *LINE_LAYOUT_FIELDS})


def given_decode_fields(overrides: Sequence[str] | None = None) -> frozenset[str]:
    """The ``decode`` fields a command line sets (:func:`given_fields`; ``decode=greedy`` gives them all), of the
    running Hydra task's overrides when ``overrides`` is None."""
    from hiersum.config import DecodeConfig  # the config package loads when the task starts, not for --help

    if overrides is None:
        overrides = HydraConfig.get().overrides.task
    return given_fields(overrides, "decode", preset={field.name for field in fields(DecodeConfig)})


def given_model_fields(overrides: Sequence[str]) -> frozenset[str]:
    """The ``model`` fields a command line sets (:func:`given_fields`; ``model=tiny`` gives them all)."""
    from hiersum.config import ModelConfig  # the config package loads when the task starts, not for --help

    return given_fields(overrides, "model", preset={field.name for field in fields(ModelConfig)})


def experiment_model_fields() -> frozenset[str]:
    """The ``model`` fields the running task's experiment file sets (``experiment=neus_cpu`` and the ``model:`` block
    of ``conf/experiment/neus_cpu.yaml``), found by Hydra's ``compose``: the task's config composed with the
    experiment against the same composed without it, both with the task's model preset (the experiment's own
    ``override /model:``, or the command line's ``model=``) and search path. The experiment's choice of model preset
    is not a field it sets; nor is a field it sets to its preset's own value (the two composes do not tell it apart).
    Empty without an experiment."""
    from hydra import compose

    task = HydraConfig.get()
    experiment = task.runtime.choices.get("experiment")
    if experiment is None:
        return frozenset()
    searchpath = [override for override in task.overrides.hydra if override.startswith("hydra.searchpath")]
    common = [f"model={task.runtime.choices['model']}", *searchpath]
    with_file, without = (compose(task.job.config_name, overrides=overrides).model
                          for overrides in ([*common, f"experiment={experiment}"], common))
    return frozenset(str(name) for name in with_file if with_file[name] != without[name])


def given_tokenizer_fields(overrides: Sequence[str]) -> frozenset[str]:
    """The ``tokenizer`` fields a command line sets (:func:`given_fields`; ``tokenizer=official_spm`` gives them
    all)."""
    from hiersum.config import TokenizerConfig

    return given_fields(overrides, "tokenizer", preset={field.name for field in fields(TokenizerConfig)})
