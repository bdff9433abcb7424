"""The paragraph ranker's sizes and features: the ``ranker_model`` group of ``hiersum train-ranker``, stored in
every ranker checkpoint."""

from __future__ import annotations

from dataclasses import dataclass, field

from hiersum.config.choices import RankerFeature


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
    features: list[RankerFeature] = field(default_factory=list)
    """Paragraph features the score layer reads beside the pooled LSTM states, an extension of the paper's
    ranker (which reads words only; ``[]``, the default, is the paper's): ``length`` (log(1 + words)),
    ``tfidf`` (cosine of tf-idf vectors to the title, or the centroid; the ``tfidf`` selection's score) and
    ``position`` (1 / (1 + the paragraph's index in its document)), each standardized over the example's
    paragraphs. See ``conf/ranker_model/features.yaml``."""

    def __post_init__(self) -> None:
        for name in ("embedding_dim", "hidden_size", "max_paragraph_tokens", "max_title_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"ranker_model.{name} must be >= 1, found {getattr(self, name)}")
        unknown = [name for name in self.features if name not in RankerFeature.__members__]
        if unknown or len(set(self.features)) != len(self.features):
            raise ValueError(f"ranker_model.features: expected distinct names among {', '.join(RankerFeature)}; "
                             f"found {[str(name) for name in self.features]}")
        self.features = [RankerFeature(name) for name in self.features]
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"ranker_model.dropout must be in [0, 1), found {self.dropout}")
