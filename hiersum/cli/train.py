"""``hiersum-train``: fit the hierarchical summarizer, then decode and score the test split.

Examples::

    hiersum-train                                   # small model on the embedded sample corpus
    hiersum-train model=tiny debug=fast_dev_run     # smoke test
    hiersum-train trainer=ddp trainer.devices=4 data=jsonl data.path=/data/multinews
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import hydra
import pytorch_lightning as pl
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from hiersum.checkpoints.io import load_summarizer
from hiersum.cli.common import CONFIG_DIR, run_entry_point, task_started
from hiersum.config import DataConfig, DecodeConfig, ModelConfig, OptimConfig, TokenizerConfig, register_configs
from hiersum.data.corpora import read_split
from hiersum.data.datamodule import SummarizationDataModule, split_path
from hiersum.data.tokenizer import SubwordTokenizer, load_tokenizer, train_tokenizer
from hiersum.evaluation.report import write_report
from hiersum.evaluation.split import evaluate_split
from hiersum.training.module import HierSumModule, module_hparams

log = logging.getLogger(__name__)
register_configs()


def build_tokenizer(config: TokenizerConfig, data: DataConfig, run_dir: Path) -> SubwordTokenizer:
    """Load ``config.path`` or train a tokenizer on the train split; save it in the run directory."""
    if config.path:
        tokenizer = load_tokenizer(config.path, pad=config.pad_token, bos=config.bos_token, eos=config.eos_token)
    elif data.format == "wikisum":
        raise ValueError("data.format=wikisum holds SentencePiece ids: give their tokenizer, e.g. "
                         "tokenizer=official_spm tokenizer.path=/path/to/spm9998_3.model")
    else:
        examples = read_split(split_path(data.path, "train"), data.format)
        texts = (text for e in examples for text in
                 [e.title, *e.references, *(p for d in e.documents for p in d)] if text)
        tokenizer = train_tokenizer(texts, vocab_size=config.vocab_size, lowercase=config.lowercase)
    tokenizer.save(run_dir / "tokenizer")
    return tokenizer


def instantiate_group(group: DictConfig | None) -> list[Any]:
    """Instantiate every ``_target_`` entry of a callbacks/logger group."""
    return [instantiate(node) for node in (group or {}).values() if node is not None and "_target_" in node]


def best_checkpoint(trainer: pl.Trainer) -> str | None:
    """The best checkpoint written by ModelCheckpoint, else the last one, else None."""
    callback = trainer.checkpoint_callback
    candidates = [callback.best_model_path, callback.last_model_path] if callback else []
    return next((path for path in candidates if path and Path(path).is_file()), None)


def train(cfg: DictConfig) -> dict[str, Any]:
    """Fit, then (when ``cfg.eval_split``) evaluate the best checkpoint; return the metrics."""
    pl.seed_everything(cfg.seed, workers=True)
    run_dir = Path(cfg.paths.output_dir)
    data: DataConfig = OmegaConf.to_object(cfg.data)
    model_config: ModelConfig = OmegaConf.to_object(cfg.model)
    optim: OptimConfig = OmegaConf.to_object(cfg.optim)
    decode: DecodeConfig = OmegaConf.to_object(cfg.decode)

    tokenizer = build_tokenizer(OmegaConf.to_object(cfg.tokenizer), data, run_dir)
    datamodule = SummarizationDataModule(data, tokenizer, seed=cfg.seed, model=model_config)
    module = HierSumModule(**module_hparams(model_config, optim, data, tokenizer))
    trainer: pl.Trainer = instantiate(
        cfg.trainer, callbacks=instantiate_group(cfg.get("callbacks")), logger=instantiate_group(cfg.get("logger"))
    )
    trainer.fit(module, datamodule=datamodule)

    metrics: dict[str, Any] = {"run_dir": str(run_dir), "best_checkpoint": best_checkpoint(trainer)}
    metrics["validation_loss"] = _as_float(trainer.callback_metrics.get("val/loss"))
    if cfg.eval_split and trainer.is_global_zero:
        model = load_summarizer(metrics["best_checkpoint"]).model if metrics["best_checkpoint"] else module.model
        encoded = datamodule.load_split(cfg.eval_split)
        examples = datamodule.examples[cfg.eval_split]
        if data.limit_eval_examples:
            encoded, examples = encoded[: data.limit_eval_examples], examples[: data.limit_eval_examples]
        evaluation = evaluate_split(
            model, examples, encoded, tokenizer, decode, split=cfg.eval_split,
            batch_tokens=data.batch_tokens, device=_eval_device(trainer),
        )
        metrics.update(evaluation.metrics)
        write_report(run_dir, metrics, evaluation.predictions, rows=evaluation.rows)
        log.info("metrics and report written to %s", run_dir)
    if trainer.is_global_zero:
        print(f"run directory: {run_dir}")
    return metrics


def _as_float(value: Any) -> float | None:
    return float(value) if value is not None else None


def _eval_device(trainer: pl.Trainer) -> torch.device:
    return trainer.strategy.root_device


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="train")
def _run(cfg: DictConfig) -> None:
    task_started()
    train(cfg)


def main() -> None:
    run_entry_point(_run)


if __name__ == "__main__":
    main()
