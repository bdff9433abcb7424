"""The commands on their typed configs, built in Python without Hydra, and the option checks of those
configs: each refuses a bad value in ``__post_init__`` with the option's name (which ``command_config`` turns
into a one-line usage error)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from hiersum.commands.composed import command_config
from hiersum.commands.evaluate import evaluate
from hiersum.commands.evaluate_selection import evaluate_selection_command
from hiersum.commands.prepare import prepare
from hiersum.commands.train import train
from hiersum.commands.train_ranker import train_ranker
from hiersum.config import (
    Baseline,
    BootstrapConfig,
    DataConfig,
    DecodeConfig,
    EvaluateConfig,
    EvaluateSelectionConfig,
    ModelConfig,
    OptimConfig,
    PrepareConfig,
    RankerModelConfig,
    RankerTrainConfig,
    TokenizerConfig,
    TrainConfig,
    TrainerConfig,
)
from hiersum.errors import UsageError
from tests.helpers.config import compose_config

SMALL_DATA = {"max_paragraphs": 6, "max_paragraph_tokens": 24, "max_target_tokens": 32}
"""The tiny grid of the suite (``TINY_OVERRIDES``) as :class:`DataConfig` fields."""


def selection_config(corpus: Path | str, run_dir: Path | str, **changes: Any) -> EvaluateSelectionConfig:
    """``hiersum evaluate-selection`` on ``corpus``'s validation split, first and tf-idf order, 1 and 3 paragraphs."""
    values = dict(task_name="evaluate_selection", split="validation", strategies=["first", "tfidf"], ranker=None,
                  budgets=[1, 3], limit_examples=4, bootstrap=BootstrapConfig(samples=0),
                  data=DataConfig(path=str(corpus)), tokenizer=TokenizerConfig(), paths={"output_dir": str(run_dir)})
    return EvaluateSelectionConfig(**{**values, **changes})


def evaluate_config(corpus: Path | str, run_dir: Path | str, **changes: Any) -> EvaluateConfig:
    """``hiersum evaluate`` of ``predictions.jsonl`` in ``run_dir``'s parent on ``corpus``'s validation split,
    with the lead baseline, no bootstrap."""
    values = dict(task_name="evaluate", checkpoint=None, predictions=str(Path(run_dir).parent / "predictions.jsonl"),
                  name="model", compare=None, split="validation", device="cpu", run_dir=None, attention_examples=0,
                  baselines=[Baseline.lead], bootstrap=BootstrapConfig(samples=0), data=DataConfig(path=str(corpus)),
                  decode=DecodeConfig(), paths={"output_dir": str(run_dir)})
    return EvaluateConfig(**{**values, **changes})


RANKER_OPTIMIZER = {"_target_": "torch.optim.Adam", "_partial_": True, "lr": 0.001}
"""``optimizer`` of ``conf/train_ranker.yaml``."""


def ranker_config(corpus: Path | str, run_dir: Path | str, **changes: Any) -> RankerTrainConfig:
    """``hiersum train-ranker ranker_model=tiny`` on ``corpus`` for one epoch of 8 paragraphs per example."""
    trainer = TrainerConfig(default_root_dir=str(run_dir), accelerator="cpu", devices=1, max_epochs=1,
                            enable_checkpointing=False, logger=False, num_sanity_val_steps=0,
                            enable_progress_bar=False, enable_model_summary=False)
    values = dict(task_name="train_ranker", seed=1234, optimizer=dict(RANKER_OPTIMIZER), batch_examples=4,
                  max_train_paragraphs=8, top_k=8, tokenizer=TokenizerConfig(vocab_size=300),
                  ranker_model=RankerModelConfig(embedding_dim=16, hidden_size=16, dropout=0.0,
                                                 max_paragraph_tokens=24, max_title_tokens=8),
                  data=DataConfig(path=str(corpus)), trainer=trainer, paths={"output_dir": str(run_dir)})
    return RankerTrainConfig(**{**values, **changes})


def train_config(corpus: Path | str, run_dir: Path | str, accelerator: str = "cpu") -> TrainConfig:
    """``hiersum train model=tiny debug=fast_dev_run callbacks=none logger={}`` on ``corpus`` with the suite's tiny
    settings (``TINY_OVERRIDES``), built in Python, on ``accelerator`` (``cpu`` or ``gpu``)."""
    trainer = TrainerConfig(default_root_dir=str(run_dir), accelerator=accelerator, devices=1, fast_dev_run=True,
                            use_distributed_sampler=False)
    model = ModelConfig(d_model=16, heads=2, ff_size=32, encoder_layers=2, inter_layers=[1], inter_heads=2,
                        decoder_layers=1)
    return TrainConfig(task_name="train", seed=1234, eval_split="test", ckpt_path=None, model=model,
                       tokenizer=TokenizerConfig(vocab_size=300), optim=OptimConfig(),
                       data=DataConfig(path=str(corpus), batch_tokens=2048, limit_eval_examples=4, **SMALL_DATA),
                       decode=DecodeConfig(beam_size=2, max_length=12, min_length=0), trainer=trainer,
                       paths={"output_dir": str(run_dir)})


CHECKS = [  # (what builds a valid config, the change it refuses, the option named, a part of the message)
    (evaluate_config, {"predictions": None}, "checkpoint=PATH", "exactly one of checkpoint=PATH (decode the split) "
                                                                 "and predictions=FILE (score outputs), found neither"),
    (evaluate_config, {"checkpoint": "model.ckpt"}, "predictions=FILE", "found both"),
    (evaluate_config, {"name": "lead"}, "name", "must not be the name of a baseline (lead), found 'lead'"),
    (ranker_config, {"batch_examples": 0}, "batch_examples", ">= 1, found 0"),
    (ranker_config, {"top_k": 0}, "top_k", ">= 1, found 0"),
    (selection_config, {"strategies": ["first", "best"]}, "strategies", "found ['first', 'best']"),
    (selection_config, {"strategies": []}, "strategies", "one or more of first, round_robin, tfidf, ranker, oracle"),
    (selection_config, {"budgets": [3, 0]}, "budgets", "integers >= 1, found [3, 0]"),
    (selection_config, {"budgets": []}, "budgets", "found []"),
    (selection_config, {"strategies": ["ranker"]}, "ranker=PATH", "found ranker=None"),
]


@pytest.mark.parametrize(("build", "change", "option", "message"), CHECKS,
                         ids=[f"{build.__name__}-{option}-{i}" for i, (build, _, option, _) in enumerate(CHECKS)])
def test_each_option_check_raises_from_the_dataclass_naming_the_option(build, change, option, message, tmp_path):
    valid = build(tmp_path / "corpus", tmp_path / "run")
    with pytest.raises(ValueError, match=option) as error:
        replace(valid, **change)
    assert message in str(error.value) and not isinstance(error.value, UsageError)
    composed = OmegaConf.structured(valid)  # as Hydra composes it, with the refused value
    try:
        for key, value in change.items():
            OmegaConf.update(composed, key, value, merge=False)
    except ValidationError as refused:  # a fixed choice (an enum): refused at composition already, naming it
        assert option in str(refused)
        return
    with pytest.raises(UsageError, match=option):  # the command's conversion: one usage line
        command_config(composed, type(valid), usage="hiersum <action>")


def test_evaluate_selection_runs_on_its_typed_config(tiny_corpus, tmp_path):
    report = evaluate_selection_command(selection_config(tiny_corpus, tmp_path / "run"))
    assert report["examples"] == 4 and set(report["recall"]) == {"first", "tfidf"}
    assert json.loads((tmp_path / "run" / "selection.json").read_text()) == json.loads(json.dumps(report))


def test_prepare_runs_on_its_typed_config_as_on_the_composed_one(tiny_corpus, tmp_path):
    typed = PrepareConfig(task_name="prepare", splits=["validation"], model=ModelConfig(),
                          tokenizer=TokenizerConfig(vocab_size=300),
                          data=DataConfig(path=str(tiny_corpus), **SMALL_DATA),
                          paths={"output_dir": str(tmp_path / "typed")})
    options = [f"data.path={tiny_corpus}", "splits=[validation]", "tokenizer.vocab_size=300",
               *(f"data.{name}={value}" for name, value in SMALL_DATA.items())]
    report = prepare(typed)
    assert report["validation"]["examples"] == 8
    assert report == prepare(compose_config("prepare", options, tmp_path / "composed"))


def test_evaluate_runs_on_its_typed_config_as_on_the_composed_one(tiny_corpus, tmp_path):
    records = [json.loads(line) for line in (tiny_corpus / "validation.jsonl").read_text().splitlines()]
    (tmp_path / "predictions.jsonl").write_text("".join(
        json.dumps({"id": record["id"], "summary": record["documents"][0].split("\n\n")[0]}) + "\n"
        for record in records))
    metrics = evaluate(evaluate_config(tiny_corpus, tmp_path / "typed"))
    assert metrics["n_examples"] == 8 and set(metrics["validation"]) == {"model", "lead"}
    options = [f"data.path={tiny_corpus}", f"predictions={tmp_path / 'predictions.jsonl'}", "split=validation",
               "baselines=[lead]", "bootstrap.samples=0", "attention_examples=0"]
    assert metrics == evaluate(compose_config("evaluate", options, tmp_path / "composed"), options)


def test_train_ranker_runs_on_its_typed_config_as_on_the_composed_one(tiny_corpus, tmp_path):
    result = train_ranker(ranker_config(tiny_corpus, tmp_path / "typed"))
    assert result["checkpoint"] == str(tmp_path / "typed" / "checkpoints" / "ranker-best.pt")
    options = [f"data.path={tiny_corpus}", "ranker_model=tiny", "tokenizer.vocab_size=300", "trainer.max_epochs=1",
               "trainer.accelerator=cpu", "batch_examples=4", "max_train_paragraphs=8"]
    composed = train_ranker(compose_config("train_ranker", options, tmp_path / "composed"))
    assert {**result, "checkpoint": None} == {**composed, "checkpoint": None}


@pytest.mark.slow
def test_train_runs_on_its_typed_config_as_on_the_composed_one(tiny_cfg, tiny_corpus, tmp_path, device):
    metrics = train(train_config(tiny_corpus, tmp_path / "typed", "gpu" if device.type == "cuda" else "cpu"))
    assert metrics["run_dir"] == str(tmp_path / "typed") and metrics["best_checkpoint"] is None
    composed = train(tiny_cfg("debug=fast_dev_run", "callbacks=none", output_dir=tmp_path / "composed"))
    assert {**metrics, "run_dir": None} == {**composed, "run_dir": None}
