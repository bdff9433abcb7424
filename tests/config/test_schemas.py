"""Every config composes and validates against its schema at composition time; presets inherit and hold
only what differs; the optimizer and LR schedule are built from the config; checkpoints store plain values."""

from __future__ import annotations

import copy
import datetime
import functools
import math
import shutil
from dataclasses import fields, replace
from enum import Enum
from pathlib import Path
from typing import Any, get_type_hints

import pytest
import pytorch_lightning as pl
import torch
import yaml
from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.errors import ConfigCompositionException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import ValidationError
from pytorch_lightning.accelerators import CPUAccelerator
from pytorch_lightning.strategies import DDPStrategy

from hiersum.checkpoints.migration import optim_config
from hiersum.checkpoints.official import official_training_configs
from hiersum.cli.common import CONFIG_DIR
from hiersum.cli.config_store import register_configs
from hiersum.config import (
    SELECTION_FIELDS,
    Baseline,
    BootstrapConfig,
    ConfigEnum,
    DataConfig,
    DecodeConfig,
    EvaluateConfig,
    Graph,
    ModelConfig,
    OptimConfig,
    Paragraphs,
    ParagraphSelection,
    Precision,
    Selection,
    SelectionOverrides,
    SelectionStrategy,
    ServeHost,
    Stopping,
    SummarizeConfig,
    TokenizerConfig,
    TrainConfig,
    TrainerConfig,
    config_dict,
)
from hiersum.config.choices import fixed_choices
from hiersum.data.tokenizer import train_tokenizer
from hiersum.errors import UsageError
from hiersum.evaluation.baselines import BASELINES
from hiersum.inference.pipeline import checked_device
from hiersum.inference.precision import PRECISIONS
from hiersum.model.encoder_registry import validate_encoder
from hiersum.training.module import HierSumModule, module_hparams
from hiersum.training.schedule import NoamSchedule
from hiersum.training.trackers import MLFLOW_FILE_STORE, TRACKERS
from tests.helpers.config import compose_config as compose_entry_point

register_configs()

SCHEMAS = {"model": ModelConfig, "tokenizer": TokenizerConfig, "data": DataConfig, "optim": OptimConfig,
           "decode": DecodeConfig}
GROUP_SCHEMAS = {**SCHEMAS, "trainer": TrainerConfig}
"""Every group's schema; ``SCHEMAS``: those whose defaults are their default preset's (the trainer's: Lightning's)."""
TRAIN_GROUPS = ("model", "tokenizer", "data", "optim", "decode", "trainer", "callbacks", "logger", "debug",
                "experiment")
ENTRY_POINTS = {  # primary config -> (schema, overrides that give its mandatory values)
    "train": (TrainConfig, []),
    "evaluate": (EvaluateConfig, ["predictions=p.jsonl"]),  # exactly one of checkpoint= and predictions=
    "summarize": (SummarizeConfig, ["checkpoint=x.ckpt", "input=in.jsonl", "output=out.jsonl"]),
}


def group_options(group: str) -> list[str]:
    return sorted(p.stem for p in (Path(CONFIG_DIR) / group).glob("*.yaml"))


@functools.cache
def _composed(name: str, overrides: tuple[str, ...], config_dir: str) -> DictConfig:
    """Config ``name`` composed with ``overrides`` (its ``hydra`` node kept), once per worker: this file's ~110
    compositions took most of its time (each 0.15-0.2 s: Hydra reads and parses the ~30 YAML files again and merges
    the schemas), a dozen of them the same composition again (``train`` with no override seven times)."""
    return compose_entry_point(name, overrides, "unset", config_dir=config_dir)


def compose_config(name: str, overrides: list[str], tmp_path: Path, config_dir: str = CONFIG_DIR):
    """The composed config as a task sees it (hydra node removed, ``paths`` resolvable): a copy of the composition
    of :func:`_composed`, its ``hydra`` node the :class:`HydraConfig` and its run directory ``tmp_path`` (as
    :func:`tests.helpers.config.compose_config` gives them)."""
    cfg = copy.deepcopy(_composed(name, tuple(overrides), config_dir))
    HydraConfig.instance().set_config(cfg)
    OmegaConf.update(cfg, "paths.output_dir", str(tmp_path), force_add=True)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


def composes(name: str, overrides: list[str]) -> None:
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        compose(name, overrides=overrides)


def instantiate_group(group: Any) -> list[Any]:
    return [instantiate(node) for node in (group or {}).values() if node is not None and "_target_" in node]


def instantiate_loggers(group: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The ``logger`` group built as the fit builds it: an MLflow file store allowed (for the test), a tracker whose
    package is not installed skipped (``make ci-deps`` installs them)."""
    for node in group.values():
        tracker = TRACKERS.get(node["_target_"].rpartition(".")[2])
        if tracker is not None:
            pytest.importorskip(tracker.package, reason=f"no {tracker.package} package (make ci-deps)")
    monkeypatch.setenv(MLFLOW_FILE_STORE, "true")
    return instantiate_group(group)


# --- every preset composes, validates and builds ---------------------------------------------------


@pytest.mark.parametrize(
    "override", [f"{group}={option}" for group in TRAIN_GROUPS for option in group_options(group) if option != "schema"]
)
def test_every_train_preset_composes_and_validates_against_the_schema(override, tmp_path, monkeypatch):
    cfg = compose_config("train", [override, "data.path=/tmp/corpus", f"paths.log_dir={tmp_path}"], tmp_path)
    typed = OmegaConf.to_object(cfg)  # every group built (so validated) by its dataclass, interpolations resolved
    assert isinstance(typed, TrainConfig)
    for group, schema in GROUP_SCHEMAS.items():
        assert type(getattr(typed, group)) is schema
    assert typed.data.path == "/tmp/corpus"
    callbacks = instantiate_group(cfg.callbacks)
    assert all(isinstance(callback, pl.Callback) for callback in callbacks)
    assert len(callbacks) == sum(node is not None for node in cfg.callbacks.values())  # null: a callback turned off
    assert len(instantiate_loggers(cfg.logger, monkeypatch)) == len(cfg.logger)


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_every_entry_point_config_composes_and_validates(name, tmp_path):
    schema, overrides = ENTRY_POINTS[name]
    typed = OmegaConf.to_object(compose_config(name, [*overrides, "data.path=/tmp/corpus"] if name != "summarize"
                                               else overrides, tmp_path))
    assert isinstance(typed, schema)
    assert typed.task_name == name and isinstance(typed.decode, DecodeConfig)
    if name == "evaluate":
        assert typed.bootstrap == BootstrapConfig() and typed.baselines == list(Baseline)
        assert (typed.checkpoint, typed.predictions, typed.data.path) == (None, "p.jsonl", "/tmp/corpus")
    if name == "summarize":
        assert (typed.checkpoint, typed.precision, typed.selection) == ("x.ckpt", "32-true", None)


@pytest.mark.parametrize("data", group_options("data"))
def test_data_presets_compose_in_evaluate(data, tmp_path):
    options = [*ENTRY_POINTS["evaluate"][1], f"data={data}", "data.path=/x", "decode=greedy"]
    typed = OmegaConf.to_object(compose_config("evaluate", options, tmp_path))
    assert isinstance(typed.data, DataConfig) and typed.decode.greedy


def test_cpu_trainer_preset_builds_a_trainer(tmp_path):
    cfg = compose_config("train", ["trainer=cpu"], tmp_path)
    trainer = instantiate(cfg.trainer, callbacks=instantiate_group(cfg.callbacks), logger=False)
    assert isinstance(trainer, pl.Trainer)
    assert (trainer.max_epochs, trainer.num_devices, trainer.precision) == (16, 1, "32-true")
    assert isinstance(trainer.accelerator, CPUAccelerator)
    assert trainer.max_epochs == cfg.trainer.max_epochs


def test_fast_dev_run_builds_a_fast_dev_run_trainer(tmp_path):
    cfg = compose_config("train", ["debug=fast_dev_run"], tmp_path)
    trainer = instantiate(cfg.trainer, logger=False)
    assert trainer.fast_dev_run is True and cfg.data.limit_eval_examples == 4 and cfg.decode.max_length == 20


def test_the_default_run_is_bounded_by_work_not_time(tmp_path):
    """``make train`` gives the same model on a slow and a fast machine: epochs, never a time cap."""
    cfg = compose_config("train", [], tmp_path)
    assert (cfg.trainer.max_epochs, cfg.trainer.max_time, cfg.trainer.max_steps) == (16, None, -1)


def test_gpu_trainer_preset(tmp_path):
    cfg = compose_config("train", ["trainer=gpu"], tmp_path)
    assert (cfg.trainer.accelerator, cfg.trainer.devices, cfg.trainer.precision, cfg.trainer.max_time) == (
        "gpu", 1, "bf16-mixed", None)
    assert cfg.trainer.max_epochs == 16 and cfg.trainer.use_distributed_sampler is False  # from trainer=cpu
    accelerator = "gpu" if torch.cuda.is_available() else "cpu"  # everything else builds on this machine
    trainer = instantiate(cfg.trainer, accelerator=accelerator, logger=False)
    assert trainer.precision == "bf16-mixed" and trainer.num_devices == 1


def test_ddp_trainer_preset(tmp_path):
    cfg = compose_config("train", ["trainer=ddp", "ddp_timeout=42.5"], tmp_path)
    assert (cfg.trainer.accelerator, cfg.trainer.devices, cfg.trainer.num_nodes) == ("auto", 2, 1)
    assert cfg.trainer.precision == "32-true" and cfg.trainer.max_time is None
    # on CPU as documented in conf/trainer/ddp.yaml: trainer=ddp trainer.accelerator=cpu trainer.devices=2
    trainer = instantiate(cfg.trainer, accelerator="cpu", logger=False)
    assert isinstance(trainer.strategy, DDPStrategy) and trainer.num_devices == 2 and trainer.num_nodes == 1
    # a collective waits ddp_timeout seconds for a rank (a dead one ends the job in bounded time)
    assert trainer.strategy._timeout == datetime.timedelta(seconds=42.5)
    assert compose_config("train", ["trainer=ddp"], tmp_path).ddp_timeout == 600


def test_step_checkpoints_follow_checkpoint_every_n_steps(tmp_path):
    assert compose_config("train", [], tmp_path).callbacks.step_checkpoint.every_n_train_steps == 200
    cfg = compose_config("train", ["checkpoint_every_n_steps=7"], tmp_path)
    assert instantiate(cfg.callbacks.step_checkpoint)._every_n_train_steps == 7


def test_the_slurm_launcher_runs_one_task_per_device_on_every_node(tmp_path):
    cfg = compose_config("train", ["hydra/launcher=slurm", "trainer=ddp", "trainer.num_nodes=3", "trainer.devices=4",
                                   "hydra.launcher.partition=gpu", "ckpt_path=last"], tmp_path)
    launcher = HydraConfig.get().launcher
    assert launcher._target_ == "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
    assert [OmegaConf.select(launcher, key) for key in ("nodes", "tasks_per_node", "gpus_per_node", "partition")] == [
        3, 4, 4, "gpu"]
    # Lightning takes the ranks from SLURM: one process per task, as many as nodes x devices
    trainer = instantiate(cfg.trainer, accelerator="cpu", logger=False)
    assert isinstance(trainer.strategy, DDPStrategy) and trainer.num_nodes == 3 and cfg.ckpt_path == "last"


# --- errors at composition -------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "override"), [
    ("train", "model.graph=simlarity"),
    ("train", "decode.stopping=eager"),
    ("train", "data.selection=rr"),
    ("evaluate", "decode.stopping=eager"),
    ("evaluate", "data.selection=rr"),
    ("evaluate", "baselines=[lead,lexrnk]"),
    ("summarize", "precision=64bit"),
    ("summarize", "selection=rr"),
    ("summarize", "paragraphs=words"),
    ("summarize", "decode.stopping=eager"),
])
def test_a_value_outside_a_fixed_choice_fails_at_composition(name, override):
    with pytest.raises(ConfigCompositionException):
        composes(name, [*ENTRY_POINTS[name][1], override])


@pytest.mark.parametrize(("name", "override"), [
    ("train", "sed=7"),
    ("train", "eval_splt=test"),
    ("evaluate", "checkpont=x.ckpt"),
    ("evaluate", "bootstrap.sample=10"),
    ("summarize", "checkpont=x.ckpt"),
    ("summarize", "beam_sise=3"),
    ("train", "model.d_modle=64"),
    ("train", "optim.lr=1.0"),  # the keys of the optimizer and scheduler are under optim.optimizer / optim.scheduler
])
def test_a_misspelt_key_fails_at_composition(name, override):
    with pytest.raises(ConfigCompositionException):
        composes(name, [*ENTRY_POINTS[name][1], override])


@pytest.mark.parametrize(("name", "override"), [
    ("train", "seed=abc"),
    ("train", "model.heads=many"),
    ("evaluate", "attention_examples=many"),
    ("evaluate", "bootstrap.samples=abc"),
    ("summarize", "resume=maybe"),
    ("summarize", "batch_tokens=lots"),
])
def test_a_wrong_type_fails_at_composition(name, override):
    with pytest.raises((ConfigCompositionException, ValidationError)):
        composes(name, [*ENTRY_POINTS[name][1], override])


def test_an_added_key_and_valid_choices_compose(tmp_path):
    cfg = compose_config("summarize", [*ENTRY_POINTS["summarize"][1], "+bogus=1", "precision=16",
                                       "selection=round_robin", "decode.stopping=official"], tmp_path)
    assert cfg.bogus == 1
    typed = OmegaConf.to_object(cfg)
    assert (typed.precision, typed.selection, typed.decode.stopping) == ("16-mixed", "round_robin", "official")
    assert str(typed.precision) == "16-mixed" and f"{typed.selection}" == "round_robin"  # Lightning's alias read


def test_one_precision_type_for_training_and_decoding(tmp_path):
    """``trainer.precision`` and summarize's ``precision`` are one type (:data:`Precision`, Lightning's names): the
    same value composes in both, an alias as the precision it names; decoding knows what to do under each (one
    table), and a name that is none of them is refused in one line, naming them."""
    train = OmegaConf.to_object(compose_config("train", ["trainer.precision=bf16-mixed"], tmp_path).trainer)
    summarize = OmegaConf.to_object(compose_config("summarize", [*ENTRY_POINTS["summarize"][1],
                                                                 "precision=bf16-mixed"], tmp_path))
    assert type(train.precision) is type(summarize.precision) is Precision
    assert train.precision == summarize.precision == "bf16-mixed"
    alias = OmegaConf.to_object(compose_config("train", ["trainer.precision=bf16"], tmp_path).trainer)
    assert alias.precision is Precision("bf16-mixed")
    assert set(PRECISIONS) == set(Precision)  # every training precision has its decoding
    assert PRECISIONS[Precision("bf16")].autocast is torch.bfloat16 and PRECISIONS[Precision("32")].autocast is None
    with pytest.raises(UsageError, match=r"^precision must be one of 'transformer-engine', .*, '32', '16', 'bf16', "
                                         r"found '64bit'$"):
        checked_device("cpu", "64bit")
    with pytest.raises(UsageError, match=r"^precision=16-true needs device=cuda"):
        checked_device("cpu", Precision("16-true"))


def test_a_misspelt_key_in_a_preset_file_fails_at_composition(tmp_path):
    config_dir = tmp_path / "conf"
    shutil.copytree(CONFIG_DIR, config_dir)
    with open(config_dir / "model" / "tiny.yaml", "a") as handle:
        handle.write("d_modle: 32\n")
    with pytest.raises(ConfigCompositionException):
        compose_config("train", ["model=tiny"], tmp_path, config_dir=str(config_dir))


def test_register_configs_registers_once():
    register_configs()
    repository = ConfigStore.instance().repo
    assert {"train_schema.yaml", "evaluate_schema.yaml", "summarize_schema.yaml"} <= set(repository)
    assert all("schema.yaml" in repository[group] for group in GROUP_SCHEMAS)


# --- defaults and presets --------------------------------------------------------------------------


@pytest.mark.parametrize("group", sorted(SCHEMAS))
def test_each_dataclass_default_is_its_default_preset(group, tmp_path):
    preset = OmegaConf.to_object(compose_config("train", [], tmp_path)[group])
    schema = SCHEMAS[group]
    default = schema(path=preset.path) if group == "data" else schema()
    assert preset == default
    if group not in ("data", "optim"):  # the schema node itself (no MISSING field) holds the same values
        assert OmegaConf.to_object(OmegaConf.structured(schema)) == default


def test_evaluate_bootstrap_defaults_are_bootstrap_config(tmp_path):
    typed = OmegaConf.to_object(compose_config("evaluate", ENTRY_POINTS["evaluate"][1], tmp_path))
    assert typed.bootstrap == BootstrapConfig()


def _parent_values(group: str, parent: str, tmp_path: Path) -> dict[str, Any]:
    if parent == "schema":
        return OmegaConf.to_container(OmegaConf.structured(GROUP_SCHEMAS[group]), enum_to_str=True)
    cfg = _composed("train", (f"{group}={parent}", "data.path=/x"), CONFIG_DIR)  # read, not changed: no copy
    return OmegaConf.to_container(cfg[group], enum_to_str=True)


@pytest.mark.parametrize("group", ["model", "data", "decode", "tokenizer", "optim", "trainer", "callbacks",
                                   "logger"])
def test_presets_hold_only_what_differs_from_their_parent(group, tmp_path):
    """A preset inherits through its defaults list (``schema`` or another preset of its group) and gives
    only the values that differ from it."""
    for option in group_options(group):
        raw = yaml.safe_load((Path(CONFIG_DIR) / group / f"{option}.yaml").read_text()) or {}
        parents = [entry for entry in raw.pop("defaults", []) if entry != "_self_"]
        if not parents:
            assert group in ("callbacks", "logger"), f"{group}/{option} does not extend its schema"
            continue
        inherited = _parent_values(group, parents[0], tmp_path)
        repeated = sorted(key for key, value in raw.items() if key in inherited and inherited[key] == value)
        assert not repeated, f"{group}/{option}.yaml repeats {repeated} of {parents[0]}"


def test_flat_presets_are_their_hierarchical_presets_without_inter_layers(tmp_path):
    for flat, hierarchical in [("flat_paper", "paper"), ("flat_small", "small"), ("flat_tiny", "tiny")]:
        flat_model = OmegaConf.to_object(compose_config("train", [f"model={flat}"], tmp_path).model)
        base = OmegaConf.to_object(compose_config("train", [f"model={hierarchical}"], tmp_path).model)
        assert flat_model.encoder == "flat" and list(flat_model.inter_layers) == []
        assert (flat_model.d_model, flat_model.heads, flat_model.ff_size, flat_model.encoder_layers,
                flat_model.decoder_layers, flat_model.dropout) == (
            base.d_model, base.heads, base.ff_size, base.encoder_layers, base.decoder_layers, base.dropout)


def test_paper_model_config_matches_the_paper(tmp_path):
    model = OmegaConf.to_object(compose_config("train", ["model=paper"], tmp_path).model)
    assert (model.d_model, model.heads, model.ff_size, model.encoder_layers, model.inter_layers, model.dropout) == (
        256, 8, 1024, 8, [6, 7], 0.1
    )


def test_wikisum_paper_experiment_has_the_papers_settings(tmp_path):
    cfg = compose_config("train", ["experiment=wikisum_paper", "data.path=/data/wikisum"], tmp_path)
    typed = OmegaConf.to_object(cfg)
    model, data, optim, decode, tokenizer = typed.model, typed.data, typed.optim, typed.decode, typed.tokenizer
    assert (model.d_model, model.heads, model.ff_size, model.inter_layers, model.encoder) == (
        256, 8, 1024, [6, 7], "hierarchical")
    assert (data.format, data.max_paragraphs, data.eval_max_paragraphs) == ("wikisum", 24, 40)
    assert (optim.scheduler["lr"], optim.scheduler["warmup_steps"], optim.label_smoothing) == (3.0, 8000, 0.1)
    assert (optim.optimizer["_target_"], optim.optimizer["betas"], optim.optimizer["eps"]) == (
        "torch.optim.Adam", [0.9, 0.998], 1e-9)
    assert (decode.beam_size, decode.alpha, decode.min_length, decode.max_length, decode.stopping) == (
        5, 0.4, 20, 400, "official")
    assert tokenizer.path == "/data/wikisum/spm9998_3.model"
    assert (tokenizer.pad_token, tokenizer.bos_token, tokenizer.eos_token) == ("<PAD>", "<S>", "</S>")
    flat = compose_config("train", ["experiment=wikisum_paper", "model=flat_paper", "data.path=/x"], tmp_path)
    assert OmegaConf.to_object(flat.model).encoder == "flat"


@pytest.mark.parametrize("experiment, data_format, keep_by", [
    ("cnndm_cpu", "cnndm", ("val/loss", "min")), ("aeslc_cpu", "aeslc", ("val/rougeL", "max"))])
def test_the_real_text_cpu_recipes_copy_count_steps_train_their_tokenizer_and_keep_the_best_validation_checkpoint(
        experiment, data_format, keep_by, tmp_path):
    cfg = compose_config("train", [f"experiment={experiment}", "data.path=/data/x"], tmp_path)
    typed = OmegaConf.to_object(cfg)
    assert (typed.model.copy_attention, typed.data.format, typed.tokenizer.path) == (True, data_format, None)
    assert typed.trainer.max_steps > 0 and typed.trainer.max_time is None  # bounded by steps, not wall time
    assert (typed.eval_split, cfg.callbacks.model_checkpoint.monitor, cfg.callbacks.model_checkpoint.mode) == (
        "test", *keep_by)
    assert cfg.callbacks.val_rouge.n_examples >= 100
    if data_format == "cnndm":
        assert (typed.data.paragraphs, typed.decode.no_repeat_ngram_size) == ("sentences", 3)
        # the cosine decay ends at the recipe's last step
        assert typed.optim.scheduler["num_training_steps"] == typed.trainer.max_steps


def test_the_neus_recipe_fine_tunes_a_given_checkpoint_on_ptb_text_and_keeps_the_lowest_validation_loss(tmp_path):
    cfg = compose_config("train", ["experiment=neus_cpu", "data.path=/data/neus", "init_from=/runs/cnndm/best.ckpt"],
                         tmp_path)
    typed = OmegaConf.to_object(cfg)
    assert (typed.init_from, typed.data.format, typed.data.document_separator) == (
        "/runs/cnndm/best.ckpt", "line_pairs", " [SEP] ")
    assert (typed.data.text_normalization, typed.data.selection, typed.data.paragraphs) == (
        "ptb", "tfidf", "sentences")
    assert typed.trainer.max_steps > 0 and typed.trainer.max_time is None
    assert typed.optim.scheduler["num_training_steps"] == typed.trainer.max_steps
    assert (cfg.callbacks.model_checkpoint.monitor, cfg.callbacks.model_checkpoint.mode) == ("val/loss", "min")
    assert typed.decode.min_length <= typed.decode.max_length
    assert typed.model.dropout == 0.1  # over the checkpoint's (tests/commands/test_train_init_from.py: taken)


def test_the_aeslc_fine_tuning_recipe_is_aeslc_cpu_read_as_ptb_text_on_the_fine_tuning_schedule(tmp_path):
    tuned = compose_config("train", ["experiment=aeslc_from_cnndm", "data.path=/data/aeslc",
                                     "init_from=/runs/cnndm/best.ckpt"], tmp_path)
    scratch = compose_config("train", ["experiment=aeslc_cpu", "data.path=/data/aeslc"], tmp_path)
    typed, base = OmegaConf.to_object(tuned), OmegaConf.to_object(scratch)
    assert (typed.init_from, typed.data.text_normalization, base.data.text_normalization) == (
        "/runs/cnndm/best.ckpt", "ptb", "none")
    assert (typed.optim.optimizer["lr"], typed.optim.scheduler["num_warmup_steps"]) == (1e-3, 100)
    assert typed.optim.scheduler["num_training_steps"] == typed.trainer.max_steps == base.trainer.max_steps
    assert base.optim != typed.optim  # aeslc_cpu keeps its own schedule
    for field in ("decode", "model"):  # the rest is aeslc_cpu's
        assert getattr(typed, field) == getattr(base, field)
    assert replace(typed.data, text_normalization="none") == base.data
    assert OmegaConf.to_container(tuned.callbacks) == OmegaConf.to_container(scratch.callbacks)


def test_the_cnndm_gpu_recipe_is_paper_size_bf16_for_ten_minutes(tmp_path):
    typed = OmegaConf.to_object(compose_config("train", ["experiment=cnndm_gpu", "data.path=/data/x"], tmp_path))
    assert (typed.model.d_model, typed.model.decoder_layers, typed.model.copy_attention) == (256, 6, True)
    assert (typed.trainer.accelerator, typed.trainer.precision, typed.trainer.max_time) == (
        "gpu", "bf16-mixed", "00:00:10:00")
    assert (typed.data.format, typed.data.paragraphs) == ("cnndm", "sentences")


# --- dataclass validation and enums ----------------------------------------------------------------


def test_invalid_sizes_fail_validation():
    with pytest.raises(ValueError, match="divisible"):
        ModelConfig(d_model=30, heads=4)
    with pytest.raises(ValueError, match="inter_layers"):
        ModelConfig(encoder_layers=2, inter_layers=[5])


def test_extension_options_are_validated():
    with pytest.raises(ValueError, match="model.encoder"):
        validate_encoder(ModelConfig(encoder="recurrent"))
    with pytest.raises(ValueError, match=r"inter_layers=\[\]"):
        validate_encoder(ModelConfig(encoder="flat"))
    with pytest.raises(ValueError, match="'similarity'"):
        validate_encoder(ModelConfig(encoder="flat", inter_layers=[], graph="similarity"))
    with pytest.raises(ValueError, match="pooling_penalty"):
        ModelConfig(pooling_penalty=-1.0)
    with pytest.raises(ValueError, match="model.graph must be one of 'none', 'similarity', 'discourse'"):
        ModelConfig(graph="simlarity")
    with pytest.raises(ValueError, match="data.selection"):
        DataConfig(path="x", selection="rr")
    with pytest.raises(ValueError, match="decode.stopping"):
        DecodeConfig(stopping="eager")
    with pytest.raises(ValueError, match="optim.scheduler.warmup_steps"):
        OptimConfig(scheduler={"_target_": "x", "warmup_steps": 0})
    with pytest.raises(ValueError, match="optim.optimizer"):
        OptimConfig(optimizer={"lr": 1.0})


def test_fixed_choices_are_strings_from_plain_values():
    """Configs rebuilt from a checkpoint's plain strings hold enum members that compare equal to them."""
    model = ModelConfig(graph="similarity")
    data = DataConfig(path="x", selection="round_robin")
    assert model.graph is Graph.similarity and model.graph == "similarity" and model.graph != "none"
    assert data.selection is Selection.round_robin and data.selection == "round_robin"
    assert DecodeConfig(stopping="official").stopping is Stopping.official
    assert {Graph.none: 1}["none"] == 1 and str(Graph.discourse) == "discourse" and f"{Stopping.full}" == "full"
    assert data == DataConfig(path="x", selection=Selection.round_robin)
    assert [member.value for member in Baseline] == list(BASELINES)


def test_selection_overrides_are_each_field_of_paragraph_selection_or_none():
    """The written :class:`SelectionOverrides` keeps :class:`ParagraphSelection`'s fields, in order, each typed
    ``<its type> | None`` with None (the checkpoint's) as default."""
    selection = get_type_hints(ParagraphSelection)
    assert [item.name for item in fields(SelectionOverrides)] == list(SELECTION_FIELDS)
    assert get_type_hints(SelectionOverrides) == {name: selection[name] | None for name in SELECTION_FIELDS}
    assert all(item.default is None for item in fields(SelectionOverrides))
    overrides = SelectionOverrides(max_paragraphs=3, paragraphs="sentences")
    assert overrides.paragraphs is Paragraphs.sentences and overrides.selection is None
    assert overrides.given() == {"max_paragraphs": 3, "paragraphs": Paragraphs.sentences}
    with pytest.raises(ValueError, match="^selection must be one of 'first', .*, found 'rr'$"):
        SelectionOverrides(selection="rr")


def test_fixed_choices_make_the_declared_class_with_members_a_class_body_cannot_name():
    assert issubclass(Precision, ConfigEnum) and Precision.__module__ == "hiersum.config.choices"
    assert Precision.__doc__.startswith("The numeric precision") and Precision("bf16") is Precision("bf16-mixed")
    assert [member.value for member in ServeHost] == ["127.0.0.1", "0.0.0.0", "::"]
    assert list(SelectionStrategy.__members__) == [*Selection.__members__, "oracle"]

    class Choice(ConfigEnum):
        x = "b"

    with pytest.raises(TypeError, match=r"Choice: a class of @fixed_choices holds a docstring alone, found \['x'\]"):
        fixed_choices("a")(Choice)


def test_config_dict_holds_plain_values_only():
    values = config_dict(DataConfig(path="x", selection="round_robin"))
    assert values["selection"] == "round_robin" and type(values["selection"]) is str
    assert DataConfig(**values) == DataConfig(path="x", selection="round_robin")
    assert not _enums(config_dict(ModelConfig(graph="discourse")))


def _enums(value: Any) -> list[Any]:
    if isinstance(value, Enum):
        return [value]
    if isinstance(value, dict):
        return [e for item in value.values() for e in _enums(item)]
    if isinstance(value, (list, tuple)):
        return [e for item in value for e in _enums(item)]
    return []


# --- optimizer and LR schedule from the config; checkpoints ----------------------------------------

TINY = ModelConfig(d_model=16, heads=2, ff_size=32, encoder_layers=2, inter_layers=[1], inter_heads=2,
                   decoder_layers=1, graph="similarity")


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(["alpha beta gamma delta.", "beta gamma epsilon zeta."] * 10, vocab_size=60)


def _lr_sequence(optimizer: torch.optim.Optimizer, scheduler: Any, steps: int) -> list[float]:
    rates = []
    for _ in range(steps):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return rates


@pytest.mark.parametrize("overrides", [[], ["experiment=wikisum_paper", "data.path=/x"],
                                       ["optim.scheduler.lr=1.0", "optim.scheduler.warmup_steps=3"]])
def test_optimizer_and_scheduler_are_built_from_the_config(overrides, tokenizer, tmp_path):
    typed = OmegaConf.to_object(compose_config("train", [*overrides, "model=tiny"], tmp_path))
    module = HierSumModule(**module_hparams(typed.model, typed.optim, DataConfig(path="x"), tokenizer))
    built = module.configure_optimizers()
    optimizer, scheduler = built["optimizer"], built["lr_scheduler"]["scheduler"]
    assert built["lr_scheduler"]["interval"] == "step"
    assert isinstance(optimizer, torch.optim.Adam)
    group = optimizer.param_groups[0]
    assert (group["initial_lr"], tuple(group["betas"]), group["eps"], group["weight_decay"]) == (
        1.0, (0.9, 0.998), 1e-9, 0.0)
    lr, warmup, d_model = typed.optim.scheduler["lr"], typed.optim.scheduler["warmup_steps"], typed.model.d_model
    formula = [lr * d_model**-0.5 * min(k**-0.5, k * warmup**-1.5) for k in range(1, 9)]  # update k uses lr(k)
    assert _lr_sequence(optimizer, scheduler, 8) == pytest.approx(formula, rel=1e-12)
    # the same sequence as before the schedule came from the config: Adam(lr 1.0) + LambdaLR(NoamSchedule)
    reference = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=1.0, betas=(0.9, 0.998), eps=1e-9)
    noam = torch.optim.lr_scheduler.LambdaLR(reference, NoamSchedule(lr=lr, d_model=d_model, warmup_steps=warmup))
    assert _lr_sequence(reference, noam, 8) == pytest.approx(formula, rel=1e-12)


def test_the_cosine_preset_warms_up_then_decays_to_zero_at_max_steps(tokenizer, tmp_path):
    """``optim=cosine``: AdamW at the preset's peak lr after a linear warm-up, then half a cosine to 0 at
    ``trainer.max_steps`` (transformers' schedule, stepped after every update)."""
    overrides = ["model=tiny", "optim=cosine", "trainer.max_steps=10", "optim.scheduler.num_warmup_steps=2",
                 "optim.optimizer.lr=0.01"]
    typed = OmegaConf.to_object(compose_config("train", overrides, tmp_path))
    assert typed.optim.scheduler["num_training_steps"] == 10
    module = HierSumModule(**module_hparams(typed.model, typed.optim, DataConfig(path="x"), tokenizer))
    built = module.configure_optimizers()
    assert isinstance(built["optimizer"], torch.optim.AdamW)
    rates = _lr_sequence(built["optimizer"], built["lr_scheduler"]["scheduler"], 11)
    cosine = [0.01 * 0.5 * (1 + math.cos(math.pi * (k - 2) / 8)) for k in range(2, 11)]
    assert rates == pytest.approx([0.0, 0.005, *cosine], abs=1e-12)
    assert rates[-1] == pytest.approx(0.0, abs=1e-12)


def test_another_optimizer_and_a_constant_lr_from_the_config(tokenizer):
    optim = OptimConfig(optimizer={"_target_": "torch.optim.SGD", "_partial_": True, "lr": 0.5}, scheduler=None)
    module = HierSumModule(**module_hparams(TINY, optim, DataConfig(path="x"), tokenizer))
    built = module.configure_optimizers()
    assert isinstance(built["optimizer"], torch.optim.SGD) and "lr_scheduler" not in built


def test_checkpoint_hyper_parameters_are_plain_and_load_with_weights_only(tokenizer, tmp_path):
    typed = OmegaConf.to_object(compose_config("train", ["model=tiny", "data=jsonl", "data.path=/x",
                                                         "model.graph=similarity"], tmp_path))
    assert typed.model.graph is Graph.similarity and typed.data.selection is Selection.round_robin
    hparams = module_hparams(typed.model, typed.optim, typed.data, tokenizer)
    assert not _enums(hparams)
    torch.save({"hyper_parameters": hparams}, tmp_path / "h.ckpt")
    loaded = torch.load(tmp_path / "h.ckpt", weights_only=True)["hyper_parameters"]
    assert loaded["model"]["graph"] == "similarity" and loaded["data"]["selection"] == "round_robin"
    assert ModelConfig(**loaded["model"]) == typed.model and DataConfig(**loaded["data"]) == typed.data
    assert optim_config(loaded["optim"]) == typed.optim


def test_the_optim_hyper_parameters_of_earlier_checkpoints_still_build(tokenizer):
    legacy = {"lr": 2.0, "warmup_steps": 400, "betas": [0.9, 0.998], "eps": 1e-9, "weight_decay": 0.0,
              "label_smoothing": 0.1}
    optim = optim_config(legacy)
    assert optim == replace(OptimConfig(), scheduler={**OptimConfig().scheduler, "lr": 2.0, "warmup_steps": 400})
    hparams = {**module_hparams(TINY, OptimConfig(), DataConfig(path="x"), tokenizer), "optim": legacy}
    module = HierSumModule(**hparams)
    scheduler = module.configure_optimizers()["lr_scheduler"]["scheduler"]
    assert scheduler.get_last_lr()[0] == pytest.approx(2.0 * 16**-0.5 * 400**-1.5)  # update 1 uses lr(1)


def test_official_training_configs_give_the_papers_optimizer():
    import argparse

    optim, data = official_training_configs(argparse.Namespace(lr=3.0, warmup_steps=8000, beta1=0.9, beta2=0.998))
    assert (optim.scheduler["lr"], optim.scheduler["warmup_steps"], optim.optimizer["betas"]) == (
        3.0, 8000, [0.9, 0.998])
    assert optim.optimizer["_target_"] == "torch.optim.Adam" and optim.label_smoothing == 0.1
    assert data.format == "wikisum" and data.selection == "first"
