"""``model``: the summarizer's sizes and encoder (:class:`ModelConfig`, ``conf/model/*.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hiersum.config.checks import check
from hiersum.config.choices import Graph


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
    attention_dropout: float | None = None
    """Dropout on the attention probabilities (self, context and paragraph attention) and the pooling weights, as
    fairseq's ``--attention-dropout`` and Hugging Face's ``attention_dropout``; None: ``dropout``'s value (the
    official code's single rate). 0 lets a CPU run ``scaled_dot_product_attention``'s fused kernel in training,
    which has no dropout (docs/benchmarks.md)."""
    max_positions: int = 5000
    """Length of the sinusoid tables (tokens per paragraph, paragraphs, summary length)."""
    encoder: str = "hierarchical"
    """A registered encoder (``hiersum.model.encoder_registry.ENCODERS``, checked there): ``hierarchical`` (the
    paper's model) or ``flat`` (the FT baseline: the selected paragraphs joined with a separator token
    into one sequence [B, L], a plain transformer encoder) or ``pretrained`` (a BERT-family encoder from
    ``pretrained_encoder`` applied to each paragraph, then ``encoder_layers`` new layers at its width, of which
    ``inter_layers`` are inter-paragraph; ``d_model`` is the encoder's hidden size)."""
    decoder: str = "transformer"
    """A registered decoder (``hiersum.model.decoder_registry.DECODERS``, checked there): ``transformer`` (the
    paper's, ``decoder_layers`` pre-LN layers over the encoder's memory). A checkpoint written before this option
    existed holds none and gets this default."""
    flat_max_tokens: int = 500
    """Flat encoder only: source tokens kept after joining the paragraphs (EOS is appended)."""
    graph: Graph = Graph.none
    """Paragraph graph biasing the inter-paragraph attention: ``none`` (official), ``similarity``
    (tf-idf cosine) or ``discourse`` (shared entity mentions); see ``hiersum/data/graph.py``."""
    pooling_penalty: float = 0.0
    """Weight of the pooling diversity penalty ||A A^T - I||_F^2 added to the training loss (0: off)."""
    copy_attention: bool = False
    """A pointer-generator (See et al. 2017): each decoding step mixes generating from the vocabulary with copying
    a source token through a single-head attention over the encoder's memory, with a learned switch
    (``hiersum/model/copy_attention.py``). Copying stays inside the (subword) vocabulary unless ``copy_oov``. False:
    no copy parameters, the official model."""
    copy_oov: bool = False
    """With ``copy_attention``: source words outside the vocabulary can be copied (See et al.'s extended vocabulary,
    OpenNMT's ``src_map``). A source may hold ids V + k (k = 0, 1, ...: the example's k-th distinct out-of-vocabulary
    word), which embed as ``<unk>``; the copy distribution covers V + K ids (K: the batch's most), a target may be
    labelled with them, and a summary holds them where it copies such a word (mapped back to its text by the
    caller). The plain ``<unk>`` is then never generated nor copied. Needs the tokenizer's ``<unk>`` (``unk_id``)
    and an encoder that embeds with the shared table (not ``pretrained``). False: the vocabulary's ids only."""
    coverage: bool = False
    """Coverage (See et al. 2017), with ``copy_attention``: the copy attention's score of a memory position adds
    ``w_c`` times the attention it has already received (one learned scalar), and the training loss adds
    ``coverage_loss_weight`` x sum_i min(a_ti, c_ti) per target token, which discourages attending to (and so
    repeating) what was already covered. False: no coverage parameter, the outputs of the model without it."""
    coverage_loss_weight: float = 1.0
    """With ``coverage``: the weight of the coverage loss in the training loss (See et al.: 1)."""
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
        if self.coverage and not self.copy_attention:
            raise ValueError("model.coverage=true is the copy attention's coverage: set model.copy_attention=true")
        if self.copy_oov and not self.copy_attention:
            raise ValueError("model.copy_oov=true copies through the copy attention: set model.copy_attention=true")
        check(self.coverage_loss_weight >= 0, "model.coverage_loss_weight", ">= 0", self.coverage_loss_weight)
        if self.flat_max_tokens < 1:
            raise ValueError(f"model.flat_max_tokens must be >= 1, found {self.flat_max_tokens}")
        for name in ("d_model", "heads", "ff_size", "encoder_layers", "inter_heads", "max_positions"):
            check(getattr(self, name) >= 1, f"model.{name}", ">= 1", getattr(self, name))
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
        if self.attention_dropout is not None and not 0.0 <= self.attention_dropout < 1.0:
            raise ValueError(f"model.attention_dropout must be in [0, 1) or null, found {self.attention_dropout}")

    @property
    def attention_dropout_rate(self) -> float:
        """The dropout rate of the attention probabilities and pooling weights: ``attention_dropout``, or
        ``dropout`` where it is None."""
        return self.dropout if self.attention_dropout is None else self.attention_dropout
