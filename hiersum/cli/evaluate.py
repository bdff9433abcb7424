"""``hiersum-evaluate``: decode a data split with a checkpoint and write metrics.json / report.md.

Example::

    hiersum-evaluate checkpoint=outputs/train/<run>/checkpoints/last.ckpt split=test
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from hiersum.cli.common import CONFIG_DIR
from hiersum.config import DataConfig, DecodeConfig, register_configs
from hiersum.data.datamodule import SummarizationDataModule
from hiersum.evaluation import evaluate_split
from hiersum.lit_module import load_checkpoint
from hiersum.report import write_report

log = logging.getLogger(__name__)
register_configs()


SELECTION_FIELDS = ("max_paragraphs", "max_paragraph_tokens", "max_target_tokens", "selection", "title_paragraph")
"""Data settings that shape the model's input: taken from the checkpoint unless overridden."""


def effective_data_config(trained: DataConfig | None, given: DataConfig, overrides: list[str]) -> DataConfig:
    """``given``, with the checkpoint's paragraph selection except fields overridden as ``data.<field>=``."""
    if trained is None:
        return given
    inherited = [name for name in SELECTION_FIELDS if not any(o.startswith(f"data.{name}=") for o in overrides)]
    return replace(given, **{name: getattr(trained, name) for name in inherited})


def evaluate(cfg: DictConfig, overrides: list[str] | None = None) -> dict[str, Any]:
    module = load_checkpoint(cfg.checkpoint)
    tokenizer = module.tokenizer()
    data = effective_data_config(module.data_config, OmegaConf.to_object(cfg.data), overrides or [])
    decode: DecodeConfig = OmegaConf.to_object(cfg.decode)
    datamodule = SummarizationDataModule(data, tokenizer, model=module.model_config)
    encoded = datamodule.load_split(cfg.split)
    examples = datamodule.examples[cfg.split]
    if data.limit_eval_examples:
        encoded, examples = encoded[: data.limit_eval_examples], examples[: data.limit_eval_examples]
    metrics, predictions = evaluate_split(
        module, examples, encoded, tokenizer, decode, split=cfg.split,
        batch_tokens=data.batch_tokens, device=cfg.device,
    )
    run_dir = Path(cfg.paths.output_dir)
    metrics.update({"checkpoint": str(cfg.checkpoint), "split": cfg.split, "data_path": data.path})
    write_report(run_dir, metrics, predictions)
    print(f"run directory: {run_dir}")
    return metrics


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="evaluate")
def main(cfg: DictConfig) -> None:
    evaluate(cfg, list(HydraConfig.get().overrides.task))


if __name__ == "__main__":
    main()
