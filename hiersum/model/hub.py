"""``save_pretrained`` / ``from_pretrained`` of :class:`hiersum.model.HierSum`: a model directory in the Hugging
Face layout, through ``huggingface_hub``'s :class:`~huggingface_hub.PyTorchModelHubMixin`.

A directory holds ``model.safetensors`` (the weights, written and read by ``safetensors``: no pickle; a weight
shared by several modules, as the tied embedding table, is stored once) and ``config.json``: the keyword arguments
of ``HierSum(config, vocab_size=..., pad_id=..., bos_id=..., eos_id=..., separator_id=...)``, ``config`` the
:class:`~hiersum.config.ModelConfig` as a dict, made self-contained (:func:`portable_config`). Loading reads a
local directory only (never the hub) and never unpickles: the mixin's fallback to ``pytorch_model.bin`` is not
used. The files a whole exported summarizer adds (tokenizer, decoding defaults, model card) are
:mod:`hiersum.checkpoints.directory`'s.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import safetensors.torch
from huggingface_hub import PyTorchModelHubMixin, constants

from hiersum.config import ModelConfig
from hiersum.private_apis import ModelHubLoadHook

WEIGHTS_FILE = constants.SAFETENSORS_SINGLE_FILE
"""``model.safetensors``."""
CONFIG_FILE = constants.CONFIG_NAME
"""``config.json``."""
INIT_KEYS = ("config", "vocab_size", "pad_id", "bos_id", "eos_id", "separator_id", "unk_id")
"""The keys of ``config.json`` that rebuild the network (``HierSum``'s arguments; those of
:data:`OPTIONAL_INIT_KEYS` may be missing)."""
OPTIONAL_INIT_KEYS = ("separator_id", "unk_id")
"""The keys of :data:`INIT_KEYS` that directories of earlier versions lack (``HierSum`` takes None for them)."""


def portable_config(config: ModelConfig) -> ModelConfig:
    """``config`` without what points outside a saved model: a pretrained encoder is rebuilt from the config JSON
    it records (``pretrained_config_json``), not read from ``pretrained_encoder`` (the directory may be gone; its
    weights come from the saved ones), and without a paragraph state cache (it pays off over training epochs only).
    Unchanged for the encoders trained from scratch."""
    if config.pretrained_config_json is None:
        return config
    return replace(config, pretrained_encoder=None, pretrained_cache_states=False)


class SummarizerHubMixin(ModelHubLoadHook, PyTorchModelHubMixin, library_name="hiersum",
                         tags=["summarization", "multi-document-summarization"]):
    """``save_pretrained(directory)`` / ``cls.from_pretrained(directory)`` for :class:`hiersum.model.HierSum`
    (module docstring). ``from_pretrained`` loads with ``strict=True``: a weight missing from the file, or one the
    network lacks, is an error."""

    def init_arguments(self) -> dict[str, Any]:
        """What ``config.json`` holds: the network's arguments, its config made :func:`portable_config`."""
        return {"config": asdict(portable_config(self.config)), "vocab_size": self.vocab_size,
                "pad_id": self.pad_id, "bos_id": self.bos_id, "eos_id": self.eos_id, "separator_id": self.separator_id,
                "unk_id": self.unk_id}

    def save_pretrained(self, save_directory: str | Path, *, config: dict | None = None, **kwargs: Any) -> str | None:
        """Write ``model.safetensors``, ``config.json`` (``config``, default :meth:`init_arguments`; extra keys are
        kept and ignored when loading) and a model card ``README.md`` (unless one is there) into
        ``save_directory`` (``PyTorchModelHubMixin.save_pretrained``; ``push_to_hub`` and its arguments too)."""
        return super().save_pretrained(save_directory, config=config or self.init_arguments(), **kwargs)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str | Path, **kwargs: Any) -> Any:
        """The network saved in a local directory by :meth:`save_pretrained`, in eval mode (keyword arguments:
        ``map_location``, default ``cpu``). A path that is not a directory is a ``FileNotFoundError``: a hub id is
        not looked up."""
        directory = Path(pretrained_model_name_or_path)
        if not directory.is_dir():
            raise FileNotFoundError(f"{directory}: not found; expected a local model directory of save_pretrained "
                                    f"({WEIGHTS_FILE}, {CONFIG_FILE})")
        return super().from_pretrained(directory, local_files_only=True, **kwargs)

    @classmethod
    def load_from_directory(cls, *, model_id: str, config: dict[str, Any], map_location: str = "cpu",
                            **model_kwargs: Any) -> Any:
        """The mixin's loading hook (:class:`hiersum.private_apis.ModelHubLoadHook`): build the network from
        ``config.json`` (its ``config`` a :class:`ModelConfig`), then load ``model.safetensors`` into it with
        ``strict=True`` onto ``map_location``, in eval mode (as the mixin's own safetensors loader does)."""
        arguments = {key: model_kwargs[key] for key in INIT_KEYS[1:] if key in model_kwargs}
        network = cls(ModelConfig(**config), **arguments)
        safetensors.torch.load_model(network, str(Path(model_id) / WEIGHTS_FILE), strict=True, device=map_location)
        return network.eval()
