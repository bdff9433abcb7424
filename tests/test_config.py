"""Every config group composes, validates against its schema and instantiates."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from hydra.errors import ConfigCompositionException
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from hiersum.cli.common import CONFIG_DIR
from hiersum.cli.train import instantiate_group
from hiersum.config import ModelConfig, register_configs

register_configs()


def group_options(group: str) -> list[str]:
    return sorted(p.stem for p in (Path(CONFIG_DIR) / group).glob("*.yaml"))


def compose_train(overrides: list[str], tmp_path: Path):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose("train", overrides=overrides, return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    OmegaConf.update(cfg, "paths.output_dir", str(tmp_path), force_add=True)
    return cfg


@pytest.mark.parametrize(
    "override",
    [f"{group}={option}" for group in ("model", "data", "optim", "decode", "trainer", "callbacks", "logger", "debug",
                                         "tokenizer")
     for option in group_options(group) if option != "schema"],
)
def test_every_train_group_option_composes_and_builds(override, tmp_path):
    cfg = compose_train([override, "data.path=/tmp"], tmp_path)
    for group in ("model", "data", "optim", "decode", "tokenizer"):
        typed = OmegaConf.to_object(cfg[group])
        assert type(typed).__name__.endswith("Config")
    callbacks = instantiate_group(cfg.get("callbacks"))
    loggers = instantiate_group(cfg.get("logger"))
    if override.startswith("trainer=") and override != "trainer=cpu":
        return  # gpu/ddp trainers need the hardware; their composition is what is tested here
    trainer = instantiate(cfg.trainer, callbacks=callbacks, logger=loggers)
    assert trainer.max_epochs == cfg.trainer.max_epochs or cfg.trainer.get("fast_dev_run")


@pytest.mark.parametrize("name", ["evaluate", "summarize"])
def test_other_entry_point_configs_compose(name):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(name, overrides=["checkpoint=x.ckpt", "+input=a"] if name == "evaluate" else
                      ["checkpoint=x.ckpt", "input=a", "output=b"])
    assert cfg.checkpoint == "x.ckpt" and OmegaConf.to_object(cfg.decode).beam_size >= 1


def test_paper_model_config_matches_the_paper():
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose("train", overrides=["model=paper"])
    model = OmegaConf.to_object(cfg.model)
    assert (model.d_model, model.heads, model.ff_size, model.encoder_layers, model.inter_layers, model.dropout) == (
        256, 8, 1024, 8, [6, 7], 0.1
    )


def test_typo_and_wrong_type_fail_at_composition():
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        with pytest.raises(ConfigCompositionException):
            compose("train", overrides=["model.d_modle=64"])
        with pytest.raises((ConfigCompositionException, ValidationError)):
            compose("train", overrides=["model.heads=many"])


def test_invalid_sizes_fail_validation():
    with pytest.raises(ValueError, match="divisible"):
        ModelConfig(d_model=30, heads=4)
    with pytest.raises(ValueError, match="inter_layers"):
        ModelConfig(encoder_layers=2, inter_layers=[5])


def test_wikisum_paper_experiment_has_the_papers_settings(tmp_path):
    cfg = compose_train(["experiment=wikisum_paper", "data.path=/data/wikisum"], tmp_path)
    model, data = OmegaConf.to_object(cfg.model), OmegaConf.to_object(cfg.data)
    optim, decode = OmegaConf.to_object(cfg.optim), OmegaConf.to_object(cfg.decode)
    tokenizer = OmegaConf.to_object(cfg.tokenizer)
    assert (model.d_model, model.heads, model.ff_size, model.inter_layers, model.encoder) == (
        256, 8, 1024, [6, 7], "hierarchical")
    assert (data.format, data.max_paragraphs, data.eval_max_paragraphs) == ("wikisum", 24, 40)
    assert (optim.lr, optim.warmup_steps, optim.betas, optim.label_smoothing) == (3.0, 8000, [0.9, 0.998], 0.1)
    assert (decode.beam_size, decode.alpha, decode.min_length, decode.max_length) == (5, 0.4, 20, 400)
    assert tokenizer.path == "/data/wikisum/spm9998_3.model"
    assert (tokenizer.pad_token, tokenizer.bos_token, tokenizer.eos_token) == ("<PAD>", "<S>", "</S>")
    flat = compose_train(["experiment=wikisum_paper", "model=flat_paper", "data.path=/x"], tmp_path)
    assert OmegaConf.to_object(flat.model).encoder == "flat"


def test_extension_options_are_validated():
    with pytest.raises(ValueError, match="model.encoder"):
        ModelConfig(encoder="recurrent")
    with pytest.raises(ValueError, match="inter_layers=\\[\\]"):
        ModelConfig(encoder="flat")
    with pytest.raises(ValueError, match="pooling_penalty"):
        ModelConfig(pooling_penalty=-1.0)
