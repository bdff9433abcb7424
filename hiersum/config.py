"""Typed configuration schemas, registered with Hydra's ConfigStore.

Every YAML file under ``conf/`` is validated against one of these dataclasses at
composition time, so a misspelt key, a wrong type or a value outside a fixed set of choices
(an :class:`enum.Enum` field) fails before training starts. The primary configs (``train.yaml``,
``evaluate.yaml``, ``summarize.yaml``) extend :class:`TrainConfig`, :class:`EvaluateConfig` and
:class:`SummarizeConfig`; the files of a group (``conf/<group>/*.yaml``) extend ``<group>/schema``.

The defaults of a group's dataclass are those of the group's default preset (e.g. ``ModelConfig`` =
``conf/model/small.yaml``), so a preset holds only what differs from its parent. Each dataclass
checks its own invariants in ``__post_init__``.

Fixed choices are :class:`ConfigEnum` members, which are strings (``config.graph == "none"``);
:func:`config_dict` turns a config into plain values (what checkpoints store). This module imports
nothing from hiersum.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, TypeVar

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING


class ConfigEnum(str, Enum):
    """A fixed choice of a config field: a ``str`` equal to its value, printed as its value.

    Member names equal their values: OmegaConf looks a YAML or command-line string up by name and
    refuses any other at composition. An integer from the command line (``precision=16``) is looked
    up by its digits.
    """

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return repr(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @classmethod
    def _missing_(cls, value: object) -> ConfigEnum | None:
        if isinstance(value, int) and not isinstance(value, bool):
            return cls.__members__.get(str(value))
        return None

    @classmethod
    def coerce(cls, value: Any, key: str) -> Any:
        """``value`` as a member (from a member or its string); ``ValueError`` naming ``key`` otherwise."""
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(repr(member.value) for member in cls)
            raise ValueError(f"{key} must be one of {choices}, found {value!r}") from None


class Graph(ConfigEnum):
    """``model.graph``: the paragraph graph biasing the inter-paragraph attention."""

    none = "none"
    similarity = "similarity"
    discourse = "discourse"


class Selection(ConfigEnum):
    """``data.selection``: the order paragraphs are kept in."""

    first = "first"
    round_robin = "round_robin"
    tfidf = "tfidf"
    """Cosine similarity of tf-idf word vectors to the title, or to the example's centroid without a title."""
    ranker = "ranker"
    """The score of a trained paragraph ranker (``data.ranker``: its checkpoint; ``hiersum train-ranker``)."""


class OnError(ConfigEnum):
    """``data.on_error``: what a malformed record of a data split does."""

    fail = "fail"
    """Stop with one line naming the file, line, field, what was expected and found (exit status 2)."""
    skip = "skip"
    """Leave the record out, count it and list it in ``<run>/data_errors.jsonl``."""


class Stopping(ConfigEnum):
    """``decode.stopping``: when beam search ends an example."""

    full = "full"
    official = "official"


Precision = ConfigEnum("Precision", [("32", "32"), ("bf16", "bf16"), ("16", "16"), ("bf16-true", "bf16-true")])
"""``hiersum summarize precision``: float32, autocast to bfloat16 / float16, or the weights in bfloat16
(``bf16-true``)."""


class Baseline(ConfigEnum):
    """``hiersum evaluate baselines``: the baselines built from the examples
    (``hiersum.evaluation.baselines.BASELINES``)."""

    lead = "lead"
    oracle = "oracle"
    lexrank = "lexrank"


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def config_dict(config: Any) -> dict[str, Any]:
    """``asdict(config)`` with plain values only (an enum member becomes its string): what a checkpoint
    stores, loadable with ``torch.load(weights_only=True)`` and rebuilt by ``Schema(**values)``."""
    return _plain(asdict(config))


def _check(ok: bool, key: str, expected: str, value: Any) -> None:
    """``ValueError`` ``KEY must be EXPECTED, found VALUE`` unless ``ok``."""
    if not ok:
        raise ValueError(f"{key} must be {expected}, found {value!r}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass
class ModelConfig:
    """Sizes of the hierarchical summarizer (Liu & Lapata 2019); defaults = ``conf/model/small.yaml``."""

    d_model: int = 128
    """Width of every token and paragraph state (D)."""
    heads: int = 4
    """Attention heads of the local (paragraph-level) and decoder layers."""
    ff_size: int = 256
    """Inner width of the position-wise feed-forward blocks."""
    encoder_layers: int = 4
    """Total encoder layers, local and inter-paragraph together."""
    inter_layers: list[int] = field(default_factory=lambda: [2, 3])
    """0-based indices of the encoder layers that are inter-paragraph layers."""
    inter_heads: int = 4
    """Pooling heads of an inter-paragraph layer (paragraph vector = heads x D/heads)."""
    decoder_layers: int = 2
    """Transformer decoder layers."""
    dropout: float = 0.0
    """Dropout on embeddings, attention outputs and feed-forward blocks."""
    max_positions: int = 5000
    """Length of the sinusoid tables (tokens per paragraph, paragraphs, summary length)."""
    encoder: str = "hierarchical"
    """A registered encoder (``hiersum.model.encoder_registry.ENCODERS``, checked there): ``hierarchical`` (the
    paper's model) or ``flat`` (the FT baseline: the selected paragraphs joined with a separator token
    into one sequence [B, L], a plain transformer encoder) or ``pretrained`` (a BERT-family encoder from
    ``pretrained_encoder`` applied to each paragraph, then ``encoder_layers`` new layers at its width, of which
    ``inter_layers`` are inter-paragraph; ``d_model`` is the encoder's hidden size)."""
    flat_max_tokens: int = 500
    """Flat encoder only: source tokens kept after joining the paragraphs (EOS is appended)."""
    graph: Graph = Graph.none
    """Paragraph graph biasing the inter-paragraph attention: ``none`` (official), ``similarity``
    (tf-idf cosine) or ``discourse`` (shared entity mentions); see ``hiersum/data/graph.py``."""
    pooling_penalty: float = 0.0
    """Weight of the pooling diversity penalty ||A A^T - I||_F^2 added to the training loss (0: off)."""
    pretrained_encoder: str | None = None
    """``encoder=pretrained``: a local Hugging Face directory of a BERT-family encoder (``config.json``, weights,
    tokenizer), read with ``local_files_only`` (never the hub). Its weights initialise the paragraph-level
    layers when the network is built for training; a checkpoint rebuilds the network without it."""
    pretrained_config_json: str | None = None
    """``encoder=pretrained``: the encoder's Hugging Face config as JSON. Read from ``pretrained_encoder`` when the
    network is first built (leave it null) and saved in checkpoints, which therefore need no directory."""
    tie_decoder_embeddings: bool = True
    """``encoder=pretrained``: the decoder's input and output embeddings are the encoder's word embeddings
    (one shared table); false: a table of the decoder's own, of the same size (random, or a copy of them:
    ``copy_decoder_embeddings``)."""
    copy_decoder_embeddings: bool = False
    """``encoder=pretrained`` with ``tie_decoder_embeddings=false``: the decoder's own table starts as a copy of the
    encoder's word embeddings and is trained apart from them (what PreSumm's ``share_emb`` does); false: random."""
    pretrained_frozen_layers: int = 0
    """``encoder=pretrained``: the lowest N transformer layers of the pretrained encoder are frozen (0: none)."""
    pretrained_frozen_embeddings: bool = False
    """``encoder=pretrained``: the pretrained encoder's embeddings (words, positions, LayerNorm) are frozen. With every
    layer frozen as well the encoder is a fixed feature extractor, run without dropout; a tied decoder table
    (``tie_decoder_embeddings``) is frozen with it."""
    pretrained_cache_states: bool = False
    """``encoder=pretrained``, fully frozen (every layer and the embeddings): keep each distinct paragraph's token
    states in memory, keyed by its token ids, so that the pretrained encoder runs once per paragraph, not once per
    epoch (the cache holds ~4 x D bytes per distinct paragraph token; it is not saved in checkpoints)."""
    pretrained_wrap_ids: list[int] | None = None
    """``encoder=pretrained``: the ids put before and after each paragraph for the pretrained encoder, as BERT was
    trained (``[CLS]``, ``[SEP]``; their states are not part of the memory). Null: read from the directory's
    tokenizer (its cls and sep tokens); ``[]``: none."""

    def __post_init__(self) -> None:
        self.graph = Graph.coerce(self.graph, "model.graph")
        if self.pretrained_wrap_ids is not None and len(self.pretrained_wrap_ids) not in (0, 2):
            raise ValueError(f"model.pretrained_wrap_ids must be [] or [before, after], "
                             f"found {self.pretrained_wrap_ids}")
        if self.pretrained_frozen_layers < 0:
            raise ValueError(f"model.pretrained_frozen_layers must be >= 0, found {self.pretrained_frozen_layers}")
        if self.pretrained_cache_states and not self.pretrained_frozen_embeddings:
            raise ValueError("model.pretrained_cache_states=true needs a fully frozen encoder: set model."
                             "pretrained_frozen_embeddings=true and model.pretrained_frozen_layers to its layer count")
        if self.copy_decoder_embeddings and self.tie_decoder_embeddings:
            raise ValueError("model.copy_decoder_embeddings=true gives the decoder a table of its own: set "
                             "model.tie_decoder_embeddings=false")
        if self.pooling_penalty < 0:
            raise ValueError(f"model.pooling_penalty must be >= 0, found {self.pooling_penalty}")
        if self.flat_max_tokens < 1:
            raise ValueError(f"model.flat_max_tokens must be >= 1, found {self.flat_max_tokens}")
        for name in ("d_model", "heads", "ff_size", "encoder_layers", "inter_heads", "max_positions"):
            _check(getattr(self, name) >= 1, f"model.{name}", ">= 1", getattr(self, name))
        if self.d_model % self.heads:
            raise ValueError(f"model.d_model={self.d_model} must be divisible by model.heads={self.heads}")
        if self.d_model % self.inter_heads:
            raise ValueError(
                f"model.d_model={self.d_model} must be divisible by model.inter_heads={self.inter_heads}"
            )
        if self.d_model % 2:
            raise ValueError(f"model.d_model={self.d_model} must be even (two half-width position tables)")
        bad = [i for i in self.inter_layers if not 0 <= i < self.encoder_layers]
        if bad:
            raise ValueError(
                f"model.inter_layers={list(self.inter_layers)} must index layers 0..{self.encoder_layers - 1}"
            )
        if self.decoder_layers < 1:
            raise ValueError(f"model.decoder_layers must be >= 1, found {self.decoder_layers}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"model.dropout must be in [0, 1), found {self.dropout}")


@dataclass
class TokenizerConfig:
    """Where the subword tokenizer comes from; defaults = ``conf/tokenizer/default.yaml``."""

    path: str | None = None
    """A local HF tokenizer directory or a ``tokenizer.json``; None trains one on the train split."""
    vocab_size: int = 4000
    """Vocabulary size when training a tokenizer."""
    lowercase: bool = False
    """Lowercase text before tokenizing (only when training a tokenizer)."""
    pad_token: str | None = None
    """Padding token of a loaded tokenizer (None: ``<pad>``, else the official ``<PAD>``)."""
    bos_token: str | None = None
    """Begin-of-summary token of a loaded tokenizer (None: ``<s>``, else the official ``<S>``)."""
    eos_token: str | None = None
    """End-of-summary token of a loaded tokenizer (None: ``</s>``, else the official ``</S>``)."""


@dataclass
class DataConfig:
    """Which corpus to read and how to turn an example into a [P, T] grid of token ids; defaults =
    ``conf/data/sample.yaml`` (except ``path``, which every preset gives)."""

    path: str = MISSING
    """Folder holding the splits, e.g. ``{train,validation,test}.jsonl`` (format ``jsonl``), ``{train,dev,test}.jsonl``
    (``scitldr``) or the ranked WikiSum shards ``WIKI.{train,valid,test}.N.pt`` (``wikisum``)."""
    format: str = "jsonl"
    """A registered data format (``hiersum.data.formats.registry.FORMATS``, checked there): ``jsonl`` (native JSONL
    text), ``multinews`` (Multi-News JSONL), ``scitldr`` (SciTLDR JSONL, several references) or ``wikisum``
    (the official ranked WikiSum release: SentencePiece ids; needs ``tokenizer=official_spm``)."""
    max_paragraphs: int = 12
    """P: paragraphs kept per example."""
    max_paragraph_tokens: int = 48
    """T: tokens kept per paragraph."""
    max_target_tokens: int = 96
    """Summary tokens kept for training (BOS and EOS excluded)."""
    selection: Selection = Selection.first
    """``first`` (document order), ``round_robin`` (first paragraph of each document, then second...),
    ``tfidf`` (tf-idf similarity to the title or centroid) or ``ranker`` (a trained ranker, ``data.ranker``)."""
    ranker: str | None = None
    """The ranker checkpoint (``hiersum train-ranker``) that orders paragraphs when ``selection=ranker``."""
    title_paragraph: bool = True
    """Put the example's title (topic or entity), when it has one, as paragraph 0."""
    every_reference: bool = False
    """Train on every reference of an example, each a target of its own (the example repeated once per
    reference, ids ``<id>``, ``<id>#2``...), as the SciTLDR paper trains; False: the first reference only.
    Validation and test score against every reference either way."""
    batch_tokens: int = 6144
    """Token budget of a batch: examples x P x T of the longest example in the batch."""
    max_batch_size: int = 64
    """Upper bound on examples per batch."""
    num_workers: int = 0
    """DataLoader worker processes."""
    limit_eval_examples: int | None = None
    """Decode and score only the first N examples of the evaluated split (None: all)."""
    eval_max_paragraphs: int | None = None
    """P for the validation and test splits (None: ``max_paragraphs``); the paper trains on 24, tests on 40."""
    on_error: OnError = OnError.fail
    """A malformed record: ``fail`` (one line, exit status 2) or ``skip`` (counted, listed in
    ``<run>/data_errors.jsonl``)."""
    cache_dir: str | None = None
    """Folder of the prepared corpora (:mod:`hiersum.data.cache`); None: ``$HIERSUM_PREPARED_DIR`` when set,
    else ``$XDG_CACHE_HOME/hiersum/prepared`` (``~/.cache/hiersum/prepared``)."""
    prepare_workers: int | None = None
    """Processes that tokenize a split being prepared (a split of one chunk, 256 examples, is tokenized in the
    main process); None: the machine's cores. The prepared files are the same for any number."""

    def __post_init__(self) -> None:
        self.on_error = OnError.coerce(self.on_error, "data.on_error")
        if self.eval_max_paragraphs is not None and self.eval_max_paragraphs < 1:
            raise ValueError(f"data.eval_max_paragraphs must be >= 1 or null, found {self.eval_max_paragraphs}")
        self.selection = Selection.coerce(self.selection, "data.selection")
        if self.selection is Selection.ranker and not self.ranker:
            raise ValueError("data.selection=ranker needs data.ranker=PATH (a checkpoint of hiersum train-ranker)")
        if self.prepare_workers is not None and self.prepare_workers < 1:
            raise ValueError(f"data.prepare_workers must be >= 1 or null, found {self.prepare_workers}")
        for name in ("max_paragraphs", "max_paragraph_tokens", "max_target_tokens", "batch_tokens", "max_batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"data.{name} must be >= 1, found {getattr(self, name)}")
        _check(self.num_workers >= 0, "data.num_workers", ">= 0", self.num_workers)


NOAM_SCHEDULER = "hiersum.training.schedule.noam_scheduler"
"""``_target_`` of the noam schedule (:func:`hiersum.training.schedule.noam_scheduler`)."""


def _adam() -> dict[str, Any]:
    return {"_target_": "torch.optim.Adam", "_partial_": True, "lr": 1.0, "betas": [0.9, 0.998], "eps": 1e-9,
            "weight_decay": 0.0}


def _noam() -> dict[str, Any]:
    return {"_target_": NOAM_SCHEDULER, "_partial_": True, "lr": 0.3, "warmup_steps": 300, "d_model": None}


def _check_optimizer_options(prefix: str, node: Mapping[str, Any]) -> None:
    """The options of an optimizer or scheduler node (or a parameter group's) that cannot be right: a learning
    rate <= 0, warm-up steps < 1, a negative weight decay or epsilon, betas outside [0, 1)."""
    for name, expected in (("lr", "a number > 0"), ("weight_decay", "a number >= 0"), ("eps", "a number >= 0")):
        value = node.get(name, 1)
        _check(_is_number(value) and (value > 0 if name == "lr" else value >= 0), f"{prefix}.{name}", expected, value)
    steps = node.get("warmup_steps", 1)
    _check(_is_number(steps) and steps >= 1 and steps % 1 == 0, f"{prefix}.warmup_steps", "an integer >= 1", steps)
    betas = node.get("betas", (0, 0))
    pair = isinstance(betas, (list, tuple)) and len(betas) == 2
    _check(pair and all(_is_number(beta) and 0 <= beta < 1 for beta in betas), f"{prefix}.betas",
           "two numbers in [0, 1)", betas)


@dataclass
class ParameterGroupConfig:
    """The optimizer options and schedule of the pretrained encoder's parameter group (``optim.pretrained_group``)."""

    optimizer: dict[str, Any] = field(default_factory=dict)
    """Options of ``optim.optimizer`` replaced for this group (e.g. ``weight_decay``)."""
    scheduler: dict[str, Any] = field(default_factory=dict)
    """Options of ``optim.scheduler`` replaced for this group (e.g. noam ``lr``, ``warmup_steps``); the scheduler
    receives each as a list, one value per group (``hiersum.training.schedule.noam_scheduler`` takes them)."""


@dataclass
class OptimConfig:
    """The optimizer and its learning-rate schedule, built with ``hydra.utils.instantiate`` by
    :meth:`hiersum.training.module.HierSumModule.configure_optimizers`.

    ``optimizer`` and ``scheduler`` are MISSING in the schema, so that a preset gives each whole (no key
    of another optimizer merged in); ``conf/optim/noam.yaml`` (the default) gives Adam at base lr 1.0 times
    the noam factor ``lr * d^-0.5 * min(step^-0.5, step * warmup^-1.5)``. Built in Python without them,
    ``OptimConfig()`` takes those of ``conf/optim/noam.yaml``.
    """

    optimizer: dict[str, Any] = MISSING
    """A partial optimizer (``_partial_: true``), called with the parameters: ``instantiate(optimizer)(params)``."""
    scheduler: dict[str, Any] | None = MISSING
    """A partial LR scheduler, called with the optimizer and stepped after every update; a ``d_model``
    key left null is filled with ``model.d_model``. None: the optimizer's constant lr."""
    label_smoothing: float = 0.1
    """Label smoothing of the training loss."""
    max_consecutive_skips: int = 8
    """Divergence guard: an update whose loss or gradient is not finite is skipped (counted as
    ``train/skipped_steps``); after this many consecutive skips training stops (TrainingDiverged)."""
    pretrained_group: ParameterGroupConfig | None = None
    """The pretrained encoder's weights (``model=pretrained``) in a parameter group of their own, with their own
    optimizer options and schedule (PreSumm: lr 0.002 and warm-up 20000 for BERT, 0.2 and 10000 for the new
    layers; ``conf/optim/presumm.yaml``). None: one group for every parameter."""

    def __post_init__(self) -> None:
        if isinstance(self.pretrained_group, Mapping):
            self.pretrained_group = ParameterGroupConfig(**self.pretrained_group)
        if self.optimizer == MISSING:
            self.optimizer = _adam()
        if self.scheduler == MISSING:
            self.scheduler = _noam()
        for name in ("optimizer", "scheduler"):
            node = getattr(self, name)
            if (node is not None or name == "optimizer") and not (isinstance(node, Mapping) and "_target_" in node):
                raise ValueError(f"optim.{name} must be a mapping with a _target_, found {node!r}")
        group = self.pretrained_group
        unknown = sorted(set(group.scheduler) - set(self.scheduler or {})) if group is not None else []
        if unknown:
            raise ValueError(f"optim.pretrained_group.scheduler replaces {unknown}, which optim.scheduler does not "
                             f"have (found {sorted(self.scheduler or {})})")
        nodes = {"optim.optimizer": self.optimizer, "optim.scheduler": self.scheduler or {}}
        if group is not None:
            nodes.update({"optim.pretrained_group.optimizer": group.optimizer,
                          "optim.pretrained_group.scheduler": group.scheduler})
        for prefix, node in nodes.items():
            _check_optimizer_options(prefix, node)
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"optim.label_smoothing must be in [0, 1), found {self.label_smoothing}")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> OptimConfig:
        """From a checkpoint's ``optim`` hyper-parameters, including the flat shape of earlier versions
        (``lr``, ``warmup_steps``, ``betas``, ``eps``, ``weight_decay``, ``label_smoothing``: Adam + noam)."""
        values = dict(values)
        legacy = {key: values.pop(key) for key in ("lr", "warmup_steps", "betas", "eps", "weight_decay")
                  if key in values}
        if legacy:
            optimizer, scheduler = _adam(), _noam()
            optimizer.update({key: legacy[key] for key in ("betas", "eps", "weight_decay") if key in legacy})
            scheduler.update({key: legacy[key] for key in ("lr", "warmup_steps") if key in legacy})
            values = {"optimizer": optimizer, "scheduler": scheduler, **values}
        return cls(**values)


@dataclass
class DecodeConfig:
    """Beam search settings (beam_size 1 is greedy decoding); defaults = ``conf/decode/default.yaml``."""

    beam_size: int = 4
    alpha: float = 0.6
    """GNMT length penalty exponent: score / ((5 + len) / 6) ** alpha."""
    min_length: int = 5
    max_length: int = 80
    batch_size: int = 16
    """Examples per decoding batch (each expanded to beam_size rows)."""
    stopping: Stopping = Stopping.full
    """``full``: an example ends once beam_size hypotheses ended (fairseq / HF style);
    ``official``: it ends when its best beam ends (the official hiersumm rule)."""
    no_repeat_ngram_size: int = 0
    """Forbid a token that would repeat an n-gram of this size in a hypothesis (3: trigram
    blocking as PreSumm / fairseq); 0 turns it off."""
    n_best: int = 1
    """Hypotheses returned per example, best first (at most beam_size; 1 with greedy)."""
    greedy: bool = False
    """Greedy search (argmax at each step) instead of beam search; beam_size is ignored."""
    max_steps: int | None = None
    """Hard cap on decoding steps, over max_length and min_length (None: no cap)."""
    compile_step: bool = False
    """Compile the decoding step over a self-attention cache of fixed size (max_length + 1), with CUDA
    graphs on CUDA; the same summaries as eager. Off by default: on the 2-core CPU it does not gain
    (docs/benchmarks.md, "Compiled decoding step")."""

    def __post_init__(self) -> None:
        self.stopping = Stopping.coerce(self.stopping, "decode.stopping")
        if self.beam_size < 1:
            raise ValueError(f"decode.beam_size must be >= 1, found {self.beam_size}")
        if self.no_repeat_ngram_size < 0:
            raise ValueError(f"decode.no_repeat_ngram_size must be >= 0, found {self.no_repeat_ngram_size}")
        if not 1 <= self.n_best <= (1 if self.greedy else self.beam_size):
            raise ValueError(
                f"decode.n_best={self.n_best} must be in [1, decode.beam_size] (1 with decode.greedy=true)"
            )
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"decode.max_steps must be >= 1 or null, found {self.max_steps}")
        if self.max_length < max(self.min_length, 1):
            raise ValueError(
                f"decode.max_length={self.max_length} must be >= 1 and >= decode.min_length={self.min_length}"
            )


@dataclass
class BootstrapConfig:
    """Bootstrap resampling of the examples (intervals and paired tests); ``hiersum evaluate bootstrap``."""

    samples: int = 1000
    """Resamples; 0 turns intervals and paired tests off."""
    seed: int = 12345
    level: float = 0.95
    """Coverage of the intervals (percentile bootstrap)."""

    def __post_init__(self) -> None:
        if self.samples < 0:
            raise ValueError(f"bootstrap.samples must be >= 0, found {self.samples}")
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"bootstrap.level must be in (0, 1), found {self.level}")


TRAINER_ACCELERATORS = ("auto", "cpu", "cuda", "gpu", "mps", "tpu")
"""The accelerator names ``pytorch_lightning.Trainer`` takes (``auto``, ``gpu`` and its ``AcceleratorRegistry``)."""
TRAINER_PRECISIONS = ("transformer-engine", "transformer-engine-float16", "16-true", "16-mixed", "bf16-true",
                      "bf16-mixed", "32-true", "64-true", "64", "32", "16", "bf16")
"""The precisions ``pytorch_lightning.Trainer`` takes (``lightning_fabric.connector._PRECISION_INPUT``, as strings)."""
TRAINER_PROFILERS = ("simple", "advanced", "pytorch", "xla")
"""The profiler names ``pytorch_lightning.Trainer`` takes."""
_TRAINER_MINIMA = {"num_nodes": 1, "fast_dev_run": 0, "max_epochs": -1, "min_epochs": 0, "max_steps": -1,
                   "min_steps": 0, "check_val_every_n_epoch": 1, "num_sanity_val_steps": -1, "log_every_n_steps": 0,
                   "accumulate_grad_batches": 1, "gradient_clip_val": 0, "reload_dataloaders_every_n_epochs": 0}
"""The least value of each numeric Trainer argument (-1: no limit, or every batch of the sanity check)."""
_BATCH_LIMIT = "an int >= 0 or a float in [0.0, 1.0]"
_DURATION = "a duration 'DD:HH:MM:SS'"


def _is_batch_limit(value: Any) -> bool:
    """Lightning's rule for ``limit_*_batches``: a fraction in [0, 1] or a whole number of batches."""
    return _is_number(value) and (0 <= value <= 1 or (value > 1 and value % 1 == 0))


def _is_duration(value: Any, pattern: str = r"\d+:\d+:\d+:\d+") -> bool:
    """A ``DD:HH:MM:SS`` string matching ``pattern``."""
    return isinstance(value, str) and re.fullmatch(pattern, value.strip()) is not None


def _is_devices(value: Any) -> bool:
    """Lightning's ``devices``: ``auto``, -1 (all), a count, a list of indices or a string of them (``"0,1"``)."""
    if isinstance(value, str):
        return value == "auto" or re.fullmatch(r"-1|\d+|(\d+,)+\d*", value.replace(" ", "")) is not None
    if isinstance(value, list):
        return bool(value) and all(isinstance(index, int) and index >= 0 for index in value)
    return isinstance(value, int) and not isinstance(value, bool) and value >= -1 and value != 0


@dataclass
class TrainerConfig:
    """Every argument of ``pytorch_lightning.Trainer`` with Lightning's default (``conf/trainer/*.yaml``), set as
    ``trainer.NAME=VALUE``; a ``_target_`` node for ``hydra.utils.instantiate``. A value of the wrong type is
    refused at composition, one Lightning would refuse in ``__post_init__``. Arguments that may be objects
    (a ``_target_`` node) are ``Any``."""

    _target_: str = "pytorch_lightning.Trainer"
    """The class instantiated."""
    accelerator: Any = "auto"
    """One of :data:`TRAINER_ACCELERATORS`, or an ``Accelerator`` node."""
    strategy: Any = "auto"
    """``auto``, a registered strategy name (``ddp``, ``fsdp``, ...) or a ``Strategy`` node."""
    devices: Any = "auto"
    """Devices per node: a count (-1: all), a list of indices, a string of them (``"0,1"``) or ``auto``."""
    num_nodes: int = 1
    """Machines of a distributed run."""
    precision: str | None = None
    """One of :data:`TRAINER_PRECISIONS` (``32-true``, ``bf16-mixed``, ...); null: 32-true."""
    logger: Any = None
    """Replaced by the ``logger`` group's loggers (:func:`hiersum.training.fit.fit`)."""
    callbacks: Any = None
    """Replaced by the ``callbacks`` group's callbacks (:func:`hiersum.training.fit.fit`)."""
    fast_dev_run: int | bool = False
    """Run N (true: 1) training and validation batches, without logging or checkpoints."""
    max_epochs: int | None = None
    """Stop after this many epochs (-1: no limit; null: 1000 unless max_steps is set)."""
    min_epochs: int | None = None
    """Train at least this many epochs."""
    max_steps: int = -1
    """Stop after this many optimizer steps (-1: no limit)."""
    min_steps: int | None = None
    """Train at least this many optimizer steps."""
    max_time: str | None = None
    """Stop after this long, ``DD:HH:MM:SS`` (null: no time limit)."""
    limit_train_batches: int | float | None = None
    """Training batches per epoch: a count or a fraction (null: all)."""
    limit_val_batches: int | float | None = None
    """Validation batches per validation: a count or a fraction (null: all)."""
    limit_test_batches: int | float | None = None
    """Test batches: a count or a fraction (null: all)."""
    limit_predict_batches: int | float | None = None
    """Prediction batches: a count or a fraction (null: all)."""
    overfit_batches: int | float = 0.0
    """Train and validate on this many (or this fraction of) training batches (0: off)."""
    val_check_interval: Any = None
    """Validate every N training batches, a fraction of the epoch, or a duration ``DD:HH:MM:SS`` (null: 1.0)."""
    check_val_every_n_epoch: int | None = 1
    """Validate every N epochs (null: by val_check_interval alone)."""
    num_sanity_val_steps: int | None = None
    """Validation batches run before training (-1: all; null: 2)."""
    log_every_n_steps: int | None = None
    """Log training metrics every N steps (null: 50)."""
    enable_checkpointing: bool | None = None
    """Checkpoint with a ``ModelCheckpoint`` (one is added unless the callbacks hold one; null: true)."""
    enable_progress_bar: bool | None = None
    """Show a progress bar (null: true)."""
    enable_model_summary: bool | None = None
    """Print the model summary at the start (null: true)."""
    accumulate_grad_batches: int = 1
    """Accumulate the gradients of N batches per optimizer step."""
    gradient_clip_val: int | float | None = None
    """Clip gradients at this value (null: no clipping)."""
    gradient_clip_algorithm: str | None = None
    """``norm`` or ``value`` (null: norm)."""
    deterministic: bool | str | None = None
    """Deterministic algorithms only (``warn``: warn about the others)."""
    benchmark: bool | None = None
    """``torch.backends.cudnn.benchmark`` (null: left as it is)."""
    inference_mode: bool = True
    """Validate and test under ``torch.inference_mode`` (false: ``torch.no_grad``)."""
    use_distributed_sampler: bool = True
    """Wrap the dataloaders' samplers in a ``DistributedSampler``."""
    profiler: Any = None
    """One of :data:`TRAINER_PROFILERS`, or a ``Profiler`` node (null: none)."""
    detect_anomaly: bool = False
    """``torch.autograd`` anomaly detection."""
    barebones: bool = False
    """Turn off every feature that costs speed (logging, checkpoints, progress bar...)."""
    plugins: Any = None
    """Precision, checkpoint-IO, cluster-environment or layer-sync plugins: ``_target_`` nodes."""
    sync_batchnorm: bool = False
    """Synchronize batch norm layers across processes."""
    reload_dataloaders_every_n_epochs: int = 0
    """Rebuild the dataloaders every N epochs (0: never)."""
    default_root_dir: str | None = None
    """Where logs and checkpoints go when no logger or callback says (null: the working directory)."""
    enable_autolog_hparams: bool = True
    """Log the module's and datamodule's hyper-parameters."""
    model_registry: str | None = None
    """Name of the model in Lightning's model registry to upload checkpoints to."""

    def __post_init__(self) -> None:
        for name, least in _TRAINER_MINIMA.items():
            value = getattr(self, name)
            _check(value is None or value >= least, f"trainer.{name}", f">= {least}", value)
        _check(isinstance(self.accelerator, Mapping) or self.accelerator in TRAINER_ACCELERATORS,
               "trainer.accelerator", f"one of {', '.join(TRAINER_ACCELERATORS)}", self.accelerator)
        _check(self.precision is None or self.precision in TRAINER_PRECISIONS, "trainer.precision",
               f"one of {', '.join(TRAINER_PRECISIONS)}", self.precision)
        _check(self.profiler is None or isinstance(self.profiler, Mapping) or str(self.profiler).lower()
               in TRAINER_PROFILERS, "trainer.profiler", f"null or one of {', '.join(TRAINER_PROFILERS)}",
               self.profiler)
        _check(self.gradient_clip_algorithm is None or self.gradient_clip_algorithm.lower() in ("norm", "value"),
               "trainer.gradient_clip_algorithm", "null, norm or value", self.gradient_clip_algorithm)
        _check(self.deterministic in (None, True, False, "warn"), "trainer.deterministic", "null, true, false or "
               "warn", self.deterministic)
        for name in ("limit_train_batches", "limit_val_batches", "limit_test_batches", "limit_predict_batches",
                     "overfit_batches"):
            value = getattr(self, name)
            _check(value is None or _is_batch_limit(value), f"trainer.{name}", _BATCH_LIMIT, value)
        interval = self.val_check_interval
        _check(interval is None or _is_batch_limit(interval) or _is_duration(interval), "trainer.val_check_interval",
               f"{_BATCH_LIMIT} or {_DURATION}", interval)
        _check(self.max_time is None or _is_duration(self.max_time, r"\d+:\d\d:\d\d:\d\d"), "trainer.max_time",
               f"null or {_DURATION}", self.max_time)
        _check(_is_devices(self.devices), "trainer.devices", "auto, -1 (all), a count >= 1 or device indices "
               "([0, 1] or '0,1')", self.devices)


@dataclass
class TrainConfig:
    """``conf/train.yaml`` (``hiersum train``): its top-level keys, whose values the YAML gives, and its
    groups. ``trainer``, ``callbacks`` and ``logger`` are ``_target_`` nodes for ``hydra.utils.instantiate``."""

    task_name: str = MISSING
    """The run directory's task folder (``outputs/<task_name>/...``); ``train``."""
    seed: int = MISSING
    """Seed of every random generator (``pytorch_lightning.seed_everything``, DataLoader workers included)."""
    eval_split: str | None = MISSING
    """After fitting, decode and score this split with the best checkpoint (None: skip)."""
    ckpt_path: str | None = MISSING
    """Resume from this checkpoint; ``last``: the newest checkpoint of the run directory (a fresh start
    when it has none). None: a fresh run, except in a job of torchrun or SLURM, where it means ``last``
    (:mod:`hiersum.training.launchers`: a restarted or requeued job resumes by itself)."""
    checkpoint_every_n_steps: int | None = 200
    """A checkpoint (and ``last.ckpt``) every N training steps, whatever the validation says; None: none
    between validations. What a killed or restarted run loses at most."""
    ddp_timeout: float = 600.0
    """Seconds a DDP collective waits for a rank (the strategy's ``timeout``, ``trainer=ddp``): a rank that
    died ends the job within about this time."""
    compile: bool = False
    """Compile the model's repeated blocks in place (:meth:`hiersum.model.HierSum.compile`). Off by default: on
    a CPU it gains nothing (docs/benchmarks.md, "Compiling") and its first steps cost compile time."""
    dry_run: bool = False
    """Print the memory a training step of this config needs (parameters, optimizer state, the step's peak; fp32
    and bf16, for GPUs of 16-80 GB) and stop, training nothing (:mod:`hiersum.training.dry_run`)."""
    model: ModelConfig = MISSING
    """The summarizer's sizes and encoder (``model=small|tiny|paper|flat|pretrained...``)."""
    tokenizer: TokenizerConfig = MISSING
    """The subword tokenizer, loaded or trained on the train split."""
    data: DataConfig = MISSING
    """The corpus and how an example becomes a [P, T] grid."""
    optim: OptimConfig = MISSING
    """The optimizer and its learning-rate schedule."""
    decode: DecodeConfig = MISSING
    """The beam search of the evaluation after fitting."""
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    """``pytorch_lightning.Trainer``'s arguments with its ``_target_`` (``trainer=cpu|gpu|ddp``). Not MISSING: a
    MISSING node whose schema has ``Union`` fields fails OmegaConf's merge of the group (an AssertionError)."""
    callbacks: dict[str, Any] = field(default_factory=dict)
    """Lightning callbacks by name, each a ``_target_`` node (null or without ``_target_``: left out)."""
    logger: dict[str, Any] = field(default_factory=dict)
    """Lightning loggers by name, each a ``_target_`` node (null or without ``_target_``: left out)."""
    paths: dict[str, Any] = MISSING
    """``output_dir`` (the run directory) and the project's folders (``conf/paths/default.yaml``)."""

    def __post_init__(self) -> None:
        steps = self.checkpoint_every_n_steps
        _check(steps is None or steps >= 1, "checkpoint_every_n_steps", "null or a step count >= 1", steps)
        _check(self.ddp_timeout > 0, "ddp_timeout", "seconds > 0", self.ddp_timeout)


@dataclass
class EvaluateConfig:
    """``conf/evaluate.yaml`` (``hiersum evaluate``): its top-level keys, whose values the YAML gives."""

    task_name: str = MISSING
    """The run directory's task folder (``outputs/<task_name>/...``); ``evaluate``."""
    checkpoint: str | None = MISSING
    """A hiersum checkpoint (or model directory of ``hiersum export``) that decodes the split; exactly one of
    ``checkpoint`` and ``predictions``."""
    predictions: str | None = MISSING
    """A JSONL of ``{"id", "summary"}`` (as ``hiersum summarize`` writes) scored without a model."""
    name: str = MISSING
    """The evaluated system's name in ``metrics.json`` and the reports; not a baseline's name."""
    compare: str | None = MISSING
    """Another predictions JSONL of the same examples, tested against the system (paired bootstrap; None: none)."""
    split: str = MISSING
    """The split of ``data`` scored (``test``, ``validation``, ``train``; ``dev`` for SciTLDR)."""
    device: str = MISSING
    """Where a checkpoint decodes: ``cpu`` or ``cuda[:N]``."""
    run_dir: str | None = MISSING
    """The training run whose ``csv/metrics.csv`` curves the HTML report draws (None: the checkpoint's run)."""
    attention_examples: int = MISSING
    """Attention heatmaps of the first N examples (checkpoints with inter-paragraph attention; 0: none)."""
    compile: bool = False
    """Compile the model's repeated blocks in place (:meth:`hiersum.model.HierSum.compile`). Off by default: on
    a CPU it gains nothing (docs/benchmarks.md, "Compiling") and its first steps cost compile time."""
    baselines: list[Baseline] = MISSING
    """The baselines scored beside the system: ``lead``, ``oracle``, ``lexrank``."""
    bootstrap: BootstrapConfig = MISSING
    """Bootstrap intervals and the paired test of ``compare``."""
    workers: int = 1
    """Processes that score the split's examples (ROUGE, BLEU and chrF statistics, baselines); the same figures
    for any number (:class:`hiersum.evaluation.scoring.ScoringConfig`)."""
    data: DataConfig = MISSING
    """The corpus; with a checkpoint, its paragraph selection unless given on the command line."""
    decode: DecodeConfig = MISSING
    """The beam search of a checkpoint."""
    paths: dict[str, Any] = MISSING
    """``output_dir`` (the run directory, where the reports go) and the project's folders."""

    def __post_init__(self) -> None:
        _at_least_one(self, "workers")
        self.baselines = [Baseline.coerce(name, "baselines") for name in self.baselines]
        if (self.checkpoint is None) == (self.predictions is None):
            found = "neither" if self.checkpoint is None else "both"
            raise ValueError("give exactly one of checkpoint=PATH (decode the split) and predictions=FILE "
                             f"(score outputs), found {found}")
        if self.name in self.baselines:
            raise ValueError(f"name must not be the name of a baseline ({', '.join(self.baselines)}), "
                             f"found {self.name!r}; choose another")


@dataclass
class PrepareConfig:
    """``conf/prepare.yaml`` (``hiersum prepare``): its top-level keys, whose values the YAML gives, and its
    groups (those of ``hiersum train``: the same data, tokenizer and model give the same prepared corpus)."""

    task_name: str = MISSING
    """The run directory's task folder (``outputs/<task_name>/...``); ``prepare``."""
    splits: list[str] = MISSING
    """The splits to prepare (train, validation, test)."""
    model: ModelConfig = MISSING
    """The model whose source layout (grid or flat) and pretrained tokenizer the prepared corpus is for."""
    tokenizer: TokenizerConfig = MISSING
    """The subword tokenizer, loaded or trained on the train split (and cached with the prepared corpus)."""
    data: DataConfig = MISSING
    """The corpus and how an example becomes a [P, T] grid."""
    paths: dict[str, Any] = MISSING
    """``output_dir`` (the run directory, where ``data_errors.jsonl`` goes) and the project's folders."""


@dataclass
class SummarizeConfig:
    """``conf/summarize.yaml`` (``hiersum summarize``): its top-level keys, whose values the YAML gives.
    ``input_format`` stays a string: its values come from the data format registry
    (``hiersum.data.formats.input_formats``)."""

    task_name: str = MISSING
    checkpoint: str = MISSING
    input: str = MISSING
    input_format: str = MISSING
    output: str = MISSING
    resume: bool = MISSING
    device: str = MISSING
    precision: Precision = MISSING  # type: ignore[valid-type]
    batch_tokens: int = MISSING
    sort_window: int = MISSING
    max_paragraphs: int | None = MISSING
    max_paragraph_tokens: int | None = MISSING
    selection: Selection | None = MISSING
    ranker: str | None = None
    attention: bool = MISSING
    attention_top_k: int = MISSING
    overwrite: bool = MISSING
    """Start the output afresh even when it holds another run's summaries (``resume`` is then ignored)."""
    strict: bool = MISSING
    """An input without any record is an error (exit 2) instead of a warning."""
    devices: int = MISSING
    """Processes that summarize the input's shards (one per GPU, or sharing the CPU), merged in input order."""
    shard: str | None = MISSING
    """``I/N``: summarize only shard I of N into ``<output stem>.shard-I-of-N.jsonl`` (a cluster's array job)."""
    compile: bool = False
    """Compile the model's repeated blocks in place (:meth:`hiersum.model.HierSum.compile`). Off by default: on
    a CPU it gains nothing (docs/benchmarks.md, "Compiling") and its first steps cost compile time."""
    decode: DecodeConfig = MISSING
    paths: dict[str, Any] = MISSING

    def __post_init__(self) -> None:
        _at_least_one(self, "batch_tokens", "sort_window", "attention_top_k", "devices")


@dataclass
class ExportConfig:
    """``conf/export.yaml`` (``hiersum export``): a checkpoint written as a model directory (safetensors, JSON)."""

    task_name: str = MISSING
    """The run directory's task folder (``outputs/<task_name>/...``); ``export``."""
    checkpoint: str = MISSING
    """A hiersum checkpoint (``.ckpt``), or a run directory of ``hiersum train`` (its best checkpoint, as its
    ``metrics.json`` names it, else ``checkpoints/last.ckpt``)."""
    output: str = MISSING
    """The model directory to write (``model.safetensors``, ``config.json``, ``tokenizer.json``,
    ``generation_config.json``, ``README.md``); written whole into a temporary folder beside it, then renamed."""
    overwrite: bool = MISSING
    """Replace an existing non-empty ``output`` directory (false: refuse it)."""
    paths: dict[str, Any] = MISSING
    """The project's folders (``conf/paths/default.yaml``)."""

    def __post_init__(self) -> None:
        if not self.output.strip() or self.output.strip() == "-":
            raise ValueError(f"output must name a directory to write, found {self.output!r}")


SERVE_HOSTS = ("127.0.0.1", "0.0.0.0", "::")
"""The addresses LitServe listens on: this machine, every IPv4 interface, every interface."""
SERVE_ACCELERATORS = ("auto", "cpu", "cuda", "mps")
SERVE_LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


@dataclass
class ServeLimits:
    """The most a request of ``hiersum serve`` may ask for in its ``options`` (``conf/serve.yaml``, ``limits``)."""

    beam_size: int = 8
    max_length: int = 200
    """Largest ``max_length`` (and ``min_length``) a request may set."""
    n_best: int = 4
    no_repeat_ngram_size: int = 4

    def __post_init__(self) -> None:
        for name in ("beam_size", "max_length", "n_best", "no_repeat_ngram_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"limits.{name} must be >= 1, found {getattr(self, name)}")


@dataclass
class ServeConfig:
    """``conf/serve.yaml`` (``hiersum serve``): an HTTP summarization service on LitServe
    (:mod:`hiersum.serving`)."""

    task_name: str = MISSING
    checkpoint: str = MISSING
    """What ``hiersum summarize`` takes (read by :func:`hiersum.checkpoints.load_summarizer`)."""
    host: str = "127.0.0.1"
    """Address to listen on (``0.0.0.0``: every interface)."""
    port: int = 8000
    """In [1024, 65535] (LitServe's range)."""
    accelerator: str = "auto"
    """LitServe's accelerator: ``auto``, ``cpu``, ``cuda``."""
    devices: int = 1
    """Devices (one inference worker each)."""
    workers_per_device: int = 1
    max_batch_size: int = 16
    """Requests decoded together (LitServe's dynamic batching); 1 turns batching off."""
    batch_timeout: float = 0.05
    """Seconds a batch waits to fill up before it is decoded anyway."""
    timeout: float = 60.0
    """Seconds a request may take, queued and decoding, before a 504."""
    max_queue: int | None = None
    """Requests waiting or decoding at once; past it, 503 with ``Retry-After`` (``None``: no limit)."""
    api_key: str | None = None
    """The key every route but ``/health`` and the page requires in ``X-API-Key`` (401 without it); ``None``: the
    environment variable ``LIT_SERVER_API_KEY`` if set, else no key."""
    allow_unauthenticated: bool = False
    """Serve a host other than 127.0.0.1 without a key (refused otherwise)."""
    shutdown_timeout: float = 30.0
    """Seconds SIGTERM (or Ctrl-C) waits for the requests in flight before the HTTP process is killed."""
    max_body_bytes: int = 1_000_000
    """Largest request body; a larger one gets 413."""
    precision: Precision = Precision("32")  # type: ignore[valid-type]
    batch_tokens: int = 8192
    """Token budget of a decoding batch (examples x paragraphs x tokens)."""
    max_paragraphs: int | None = None
    max_paragraph_tokens: int | None = None
    selection: Selection | None = None  # type: ignore[valid-type]
    ranker: str | None = None
    attention_top_k: int = 3
    """Most attended paragraphs returned (``paragraphs``; models with inter-paragraph attention)."""
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    """The decoding options of a request that sets none (``summarize``'s defaults)."""
    limits: ServeLimits = field(default_factory=ServeLimits)
    log_level: str = "info"
    """Of LitServe and uvicorn (one access line a request at ``info``): ``warning`` keeps them quiet."""
    paths: dict[str, Any] = MISSING

    def __post_init__(self) -> None:
        _at_least_one(self, "devices", "workers_per_device", "max_batch_size", "max_body_bytes", "batch_tokens",
                      "attention_top_k", *(("max_queue",) if self.max_queue is not None else ()))
        choices = {"host": SERVE_HOSTS, "accelerator": SERVE_ACCELERATORS, "log_level": SERVE_LOG_LEVELS}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, found {getattr(self, name)!r}")
        if not 1024 <= self.port <= 65535:
            raise ValueError(f"port must be in [1024, 65535], found {self.port}")
        if self.batch_timeout < 0 or self.timeout <= 0 or self.shutdown_timeout <= 0:
            raise ValueError(f"batch_timeout must be >= 0, timeout and shutdown_timeout > 0; found "
                             f"{self.batch_timeout}, {self.timeout} and {self.shutdown_timeout}")


RANKER_FEATURES = ("length", "tfidf", "position")
"""Paragraph features a ranker may read (``RankerModelConfig.features``; computed by
:func:`hiersum.data.ranker_data.paragraph_features`)."""


@dataclass
class RankerModelConfig:
    """The paragraph ranker of Liu & Lapata (2019, section 3.1) (``hiersum.model.ranker.ParagraphRanker``);
    defaults = ``conf/ranker_model/paper.yaml`` (``hiersum train-ranker``'s default, ``features.yaml``, adds
    ``features``)."""

    embedding_dim: int = 128
    """Width of the token embeddings (of the run's subword tokenizer)."""
    hidden_size: int = 128
    """Hidden size of each direction of the bidirectional title and paragraph LSTMs."""
    dropout: float = 0.1
    """Dropout on the embeddings and the combined states."""
    max_paragraph_tokens: int = 64
    """Tokens of a paragraph the ranker reads."""
    max_title_tokens: int = 32
    """Tokens of a title the ranker reads."""
    features: list[str] = field(default_factory=list)
    """Paragraph features the score layer reads beside the pooled LSTM states, an extension of the paper's
    ranker (which reads words only; ``[]``, the default, is the paper's): ``length`` (log(1 + words)),
    ``tfidf`` (cosine of tf-idf vectors to the title, or the centroid; the ``tfidf`` selection's score) and
    ``position`` (1 / (1 + the paragraph's index in its document)), each standardized over the example's
    paragraphs. See ``conf/ranker_model/features.yaml``."""

    def __post_init__(self) -> None:
        for name in ("embedding_dim", "hidden_size", "max_paragraph_tokens", "max_title_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"ranker_model.{name} must be >= 1, found {getattr(self, name)}")
        unknown = [name for name in self.features if name not in RANKER_FEATURES]
        if unknown or len(set(self.features)) != len(self.features):
            raise ValueError(f"ranker_model.features: expected distinct names among {', '.join(RANKER_FEATURES)}; "
                             f"found {list(self.features)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"ranker_model.dropout must be in [0, 1), found {self.dropout}")


@dataclass
class RankerTrainConfig:
    """``conf/ranker.yaml`` (``hiersum train-ranker``): its top-level keys and groups."""

    task_name: str = MISSING
    """The run directory's task folder (``outputs/<task_name>/...``); ``train_ranker``."""
    seed: int = MISSING
    """Seed of every random generator (``pytorch_lightning.seed_everything``)."""
    optimizer: dict[str, Any] = MISSING
    """A partial optimizer (``_partial_: true``), called with the ranker's parameters."""
    batch_examples: int = MISSING
    """Examples per batch (every paragraph of each); >= 1."""
    max_train_paragraphs: int | None = MISSING
    """Paragraphs of a training example the ranker reads (document order; None: all)."""
    top_k: int = MISSING
    """Validation: the summed ROUGE-2 recall labels of the ranker's top-k paragraphs (``val_top_k_recall``); >= 1.
    Also the L' at which the trained ranker is compared with document order (a warning when below it)."""
    report_budgets: list[int] = field(default_factory=lambda: [5, 8, 10, 20, 40])
    """L' of the recall table written at the end of the run (the trained ranker against ``first`` and ``tfidf``
    on the validation split, ``<run>/selection.md``); ``top_k`` is always one of them. Each >= 1."""
    ranker_model: RankerModelConfig = MISSING
    """The ranker's sizes and features (``ranker_model=features|paper|tiny``; ``small`` = ``paper``)."""
    tokenizer: TokenizerConfig = MISSING
    """The subword tokenizer, loaded or trained on the train split."""
    data: DataConfig = MISSING
    """The corpus (its train and validation splits)."""
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    """``pytorch_lightning.Trainer``'s arguments (every one typed, as ``hiersum train``'s), with its ``_target_``."""
    paths: dict[str, Any] = MISSING
    """``output_dir`` (the run directory: ``checkpoints/ranker-best.pt``) and the project's folders."""

    def __post_init__(self) -> None:
        _at_least_one(self, "batch_examples", "top_k")
        if not self.report_budgets or min(self.report_budgets) < 1:
            raise ValueError(f"report_budgets: expected a non-empty list of L' >= 1, found {list(self.report_budgets)}")


@dataclass
class RankConfig:
    """``conf/rank.yaml`` (``hiersum rank``): raw multi-document input -> ranked native JSONL."""

    task_name: str = MISSING
    ranker: str = MISSING
    """A ranker checkpoint (``hiersum train-ranker``), or ``tfidf``."""
    input: str = MISSING
    input_format: str = MISSING
    output: str = MISSING
    top_k: int = MISSING
    """L: paragraphs kept per record, in rank order."""
    resume: bool = MISSING
    overwrite: bool = MISSING
    """Start the output afresh even when it holds another run's records (``resume`` is then ignored)."""
    strict: bool = MISSING
    """An input without any record is an error (exit 2) instead of a warning."""
    device: str = MISSING
    batch_examples: int = MISSING
    devices: int = MISSING
    """Processes that rank the input's shards, merged in input order (as ``SummarizeConfig.devices``)."""
    shard: str | None = MISSING
    """``I/N``: rank only shard I of N into ``<output stem>.shard-I-of-N.jsonl`` (a cluster's array job)."""
    paths: dict[str, Any] = MISSING

    def __post_init__(self) -> None:
        _at_least_one(self, "top_k", "batch_examples", "devices")


SELECTION_STRATEGIES = ("first", "round_robin", "tfidf", "ranker", "oracle")
"""The paragraph selection strategies ``hiersum evaluate-selection`` compares (``EvaluateSelectionConfig.strategies``;
run by :func:`hiersum.evaluation.selection.strategy_orders`)."""


@dataclass
class EvaluateSelectionConfig:
    """``conf/evaluate_selection.yaml`` (``hiersum evaluate-selection``): how much of the references the
    selected paragraphs cover, per selection strategy and paragraph budget (Liu & Lapata's Table 1)."""

    task_name: str = MISSING
    """The run directory's task folder (``outputs/<task_name>/...``); ``evaluate_selection``."""
    split: str = MISSING
    """The split of ``data`` evaluated."""
    strategies: list[str] = MISSING
    """One or more of :data:`SELECTION_STRATEGIES`: ``first``, ``round_robin``, ``tfidf``, ``ranker`` (needs
    ``ranker``) and ``oracle`` (paragraphs by their own ROUGE-2 recall against the reference)."""
    ranker: str | None = MISSING
    """A ranker checkpoint (``hiersum train-ranker``) for the ``ranker`` strategy."""
    budgets: list[int] = MISSING
    """L': the numbers of top paragraphs evaluated, each >= 1."""
    limit_examples: int | None = MISSING
    """Evaluate only the first N examples (None: all)."""
    bootstrap: BootstrapConfig = MISSING
    """The bootstrap intervals of the recalls."""
    data: DataConfig = MISSING
    """The corpus, read as text (its paragraphs, titles and references)."""
    paths: dict[str, Any] = MISSING
    """``output_dir`` (the run directory: ``selection.json``, ``selection.md``) and the project's folders."""

    def __post_init__(self) -> None:
        if not self.strategies or any(name not in SELECTION_STRATEGIES for name in self.strategies):
            raise ValueError(f"strategies must be one or more of {', '.join(SELECTION_STRATEGIES)}, "
                             f"found {list(self.strategies)}")
        if not self.budgets or min(self.budgets) < 1:
            raise ValueError(f"budgets must be one or more integers >= 1, found {list(self.budgets)}")
        if "ranker" in self.strategies and not self.ranker:
            raise ValueError("strategies holds ranker: give ranker=PATH (a checkpoint of hiersum train-ranker), "
                             f"found ranker={self.ranker!r}")


_registered: list[bool] = []


def register_configs() -> None:
    """Register the schemas so ``conf/<group>/*.yaml`` files and the primary configs are validated
    against them; the first call registers, later ones do nothing."""
    if _registered:
        return
    store = ConfigStore.instance()
    store.store(group="model", name="schema", node=ModelConfig)
    store.store(group="tokenizer", name="schema", node=TokenizerConfig)
    store.store(group="data", name="schema", node=DataConfig)
    store.store(group="optim", name="schema", node=OptimConfig)
    store.store(group="decode", name="schema", node=DecodeConfig)
    store.store(group="trainer", name="schema", node=TrainerConfig)
    store.store(name="train_schema", node=TrainConfig)
    store.store(name="evaluate_schema", node=EvaluateConfig)
    store.store(name="summarize_schema", node=SummarizeConfig)
    store.store(name="serve_schema", node=ServeConfig)
    store.store(name="prepare_schema", node=PrepareConfig)
    store.store(name="export_schema", node=ExportConfig)
    store.store(group="ranker_model", name="schema", node=RankerModelConfig)
    store.store(name="ranker_schema", node=RankerTrainConfig)
    store.store(name="rank_schema", node=RankConfig)
    store.store(name="evaluate_selection_schema", node=EvaluateSelectionConfig)
    _registered.append(True)


class UsageError(ValueError):
    """A problem with the command itself (a bad option or value, a missing or unreadable file): the
    entry points report it in one line on stderr and exit with status 2 (``hiersum.cli.common``)."""


class RunStopped(Exception):
    """A run that stopped before its end (Ctrl-C, SIGTERM, a failed write) and says in one line what it saved
    and how to go on: the entry points print the message and exit with ``exit_status``."""

    def __init__(self, message: str, *, exit_status: int) -> None:
        super().__init__(message)
        self.exit_status = exit_status


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the commands install its handler, handled like Ctrl-C."""


EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT)."""
EXIT_TERMINATED = 143
"""Exit status after SIGTERM (128 + SIGTERM)."""


def interruption_status(error: KeyboardInterrupt) -> int:
    """:data:`EXIT_TERMINATED` for :class:`Terminated`, :data:`EXIT_INTERRUPTED` for Ctrl-C."""
    return EXIT_TERMINATED if isinstance(error, Terminated) else EXIT_INTERRUPTED


class TrainingDiverged(RuntimeError):
    """Training stopped because its updates kept being non-finite (the divergence guard of
    :class:`hiersum.training.module.HierSumModule`): ``hiersum train`` reports it in one line (from
    rank 0; every rank raises it) and exits with status 1."""

    def __init__(self, message: str, *, rank: int = 0) -> None:
        super().__init__(message)
        self.rank = rank


def _at_least_one(config: Any, *names: str) -> None:
    for name in names:
        if getattr(config, name) < 1:
            raise ValueError(f"{name} must be >= 1, found {getattr(config, name)}")


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
