"""A composed Hydra config turned into its typed schema, once, at a command's entry.

Every command takes its composed config (``DictConfig``, as ``@hydra.main`` or ``hydra.compose`` gives it) or the
typed dataclass itself; :func:`command_config` turns the first into the second, and makes a value the schema's
``__post_init__`` refuses, or a mandatory value left out, a :class:`hiersum.errors.UsageError`.
"""

from __future__ import annotations

from typing import Any, TypeVar

from hiersum.errors import UsageError

CommandConfig = TypeVar("CommandConfig")


def command_config(cfg: Any, schema: type[CommandConfig], *, usage: str) -> CommandConfig:
    """The typed config of a command: ``OmegaConf.to_object`` of its composed config into ``schema`` (the
    one conversion; a config already typed is returned as is). A missing mandatory value (``???``) is a
    :class:`UsageError` naming the option and showing ``usage``; a value the schema refuses, too."""
    if isinstance(cfg, schema):
        return cfg
    from omegaconf import OmegaConf
    from omegaconf.errors import MissingMandatoryValue

    if "hydra" in cfg:  # composed with return_hydra_config (the tests): the schema has no hydra node
        cfg = OmegaConf.masked_copy(cfg, [key for key in cfg if key != "hydra"])
        cfg = OmegaConf.merge(OmegaConf.structured(schema), cfg)
    try:
        return OmegaConf.to_object(cfg)
    except MissingMandatoryValue as error:
        raise UsageError(f"missing {error.full_key}=...; usage: {usage}") from None
    except ValueError as error:
        raise UsageError(str(error)) from None


def typed_config(node: Any) -> Any:
    """The schema dataclass of a composed config node (``OmegaConf.to_object``); a value that its
    ``__post_init__`` refuses is a :class:`UsageError`."""
    from omegaconf import OmegaConf

    try:
        return OmegaConf.to_object(node)
    except ValueError as error:
        raise UsageError(str(error)) from None
