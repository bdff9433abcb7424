"""Names that vulture (``make lint``; settings in ``[tool.vulture]`` of pyproject.toml) finds unused but that are
used by name: by a config (``_target_``), by a library that reads them, or by a protocol. Vulture only parses
this file (``_`` stands for any object); nothing imports it."""
# ruff: noqa

# classes named by a config's _target_
_.Throughput  # conf/callbacks/default.yaml
_.EpochSummary  # conf/callbacks/default.yaml
_.ValidateLastStep  # conf/callbacks/default.yaml
_.ValidationRouge  # conf/callbacks/val_rouge.yaml
_.RunProbe  # tests/helpers/probes.py: +callbacks.probe._target_=tests.helpers.probes.RunProbe
_.StopAt  # tests/helpers/probes.py: +callbacks.stop._target_=tests.helpers.probes.StopAt (tests/commands/test_train_stopped.py)
_.DataProbe  # tests/helpers/probes.py: +callbacks.data_probe._target_=tests.helpers.probes.DataProbe (tests/commands/test_train_multi_node.py)
_.TrainingBudget  # scripts/bench_quality.py: +callbacks.training_budget._target_=bench_quality.TrainingBudget
_.StartingLoss  # tests/helpers/probes.py: +callbacks.starting_loss._target_=tests.helpers.probes.StartingLoss (tests/commands/test_train_init_from.py)

# hooks pytest calls by name
_.pytest_report_header  # tests/conftest.py: the venv's lost bytecode (tests/helpers/bytecode.py)

# attributes a library reads
_.should_stop  # pytorch_lightning.Trainer: a callback stops the fit (scripts/bench_quality.py TrainingBudget)
_.should_training_stop  # transformers.TrainerControl: a callback stops training (scripts/bench_quality.py BartBudget)
_.flops_per_batch  # Lightning's ThroughputMonitor reads it from the LightningModule (hiersum/training/module.py)
_.normalizer  # tokenizers.Tokenizer (hiersum/data/tokenizer.py, tests/pretrained_testkit.py)
_.pre_tokenizer  # tokenizers.Tokenizer
_.post_processor  # tokenizers.Tokenizer
_.metrics_keys  # Lightning's CSV ExperimentWriter (hiersum/training/resume.py)
_.render  # rich's ProgressColumn (hiersum/inference/batched.py)
_._missing_  # enum.Enum (hiersum/config.py ConfigEnum)
_._child_processes  # Lightning's _ChildProcessObserver reads it (hiersum/private_apis.py)
_._from_pretrained  # huggingface_hub's PyTorchModelHubMixin.from_pretrained calls it (hiersum/private_apis.py ModelHubLoadHook)
_.openapi_extra  # FastAPI merges it into the route's OpenAPI operation (hiersum/serving/server.py)

# config fields and enum values read through Hydra / OmegaConf (hiersum/config.py)
_.input  # SummarizeConfig.input, RankConfig.input
_.tfidf  # Selection.tfidf
_.auto, _.mps  # ServeAccelerator
_.critical, _.debug, _.trace  # LogLevel
# TrainerConfig fields: keyword arguments of pytorch_lightning.Trainer, passed by hydra.utils.instantiate
_.min_epochs, _.min_steps, _.limit_val_batches, _.limit_test_batches, _.limit_predict_batches, _.overfit_batches
_.check_val_every_n_epoch, _.num_sanity_val_steps, _.log_every_n_steps, _.enable_checkpointing, _.enable_progress_bar
_.enable_model_summary, _.accumulate_grad_batches, _.gradient_clip_val, _.benchmark, _.detect_anomaly, _.barebones
_.plugins, _.sync_batchnorm, _.reload_dataloaders_every_n_epochs, _.default_root_dir, _.enable_autolog_hparams
_.model_registry

# dataclass fields written out by dataclasses.asdict
_.model_sha256  # Provenance (hiersum/inference/resumable_output.py): out.provenance.json
_.hiersum_version  # Provenance

# parameters a protocol fixes
_.traceback  # __exit__ (hiersum/data/jsonl_output.py)
_.mtime_ns  # part of functools.lru_cache's key (hiersum/checkpoints/ranker.py _cached_scorer)
_.out_shape  # torch's flop counter calls the registered formulas with it (scripts/bench_train.py)

# methods a base class calls
_._compute  # ThroughputMonitor calls it after each batch (hiersum/private_apis.py ThroughputMonitorHooks)
