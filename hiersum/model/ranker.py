"""The paragraph ranker of Liu & Lapata (2019, section 3.1).

A title (or query) and each paragraph are read by their own bidirectional LSTM over token embeddings;
the title's states are max-pooled into one vector; every paragraph state is combined with it through
``tanh(W [p_t ; q] + b)``; the combined states are max-pooled over the paragraph and a linear layer gives
the logit of a sigmoid score. An example without a title gets a query made from itself: the mean, over
its paragraphs, of their max-pooled paragraph-LSTM states (the centroid of the example; the paragraphs are
read once, so a titleless corpus costs one LSTM pass, and the title LSTM is not used).

An extension (``RankerModelConfig.features``, off by default): the score layer also reads a few features of
each paragraph (its length, its tf-idf similarity to the title or centroid, its position in its document),
which max-pooled word states cannot see: on a small corpus they carry most of what predicts the label.

Dimensions: E examples, N paragraphs (of all examples), T tokens per paragraph, Q title tokens,
D embedding width, H hidden size of one LSTM direction (states 2H wide).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from hiersum.config import RankerModelConfig


def _masked_max(states: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Max over the first ``lengths[i]`` positions of ``states[i]``: [B, L, C] -> [B, C]."""
    positions = torch.arange(states.shape[1], device=states.device)
    real = positions[None, :] < lengths[:, None]  # [B, L], True = real token
    return states.masked_fill(~real[:, :, None], float("-inf")).amax(dim=1)


class ParagraphRanker(nn.Module):
    """Scores the paragraphs of examples against their titles (or centroids); see the module docstring."""

    def __init__(self, config: RankerModelConfig, *, vocab_size: int, pad_id: int) -> None:
        super().__init__()
        self.config = config
        dim, hidden = config.embedding_dim, config.hidden_size
        self.embedding = nn.Embedding(vocab_size, dim, padding_idx=pad_id)
        self.title_lstm = nn.LSTM(dim, hidden, batch_first=True, bidirectional=True)
        self.paragraph_lstm = nn.LSTM(dim, hidden, batch_first=True, bidirectional=True)
        self.combine = nn.Linear(4 * hidden, 2 * hidden)
        self.score = nn.Linear(2 * hidden + len(config.features), 1)  # pooled states || features
        self.dropout = nn.Dropout(config.dropout)

    def _states(self, lstm: nn.LSTM, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """LSTM states of the real tokens: ids [B, L], lengths [B] (each >= 1) -> [B, L', 2H], L' = max length."""
        embedded = self.dropout(self.embedding(ids))  # [B, L, D]
        packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True, enforce_sorted=False)
        states, _ = pad_packed_sequence(lstm(packed)[0], batch_first=True)
        return states

    def queries(
        self, titles: torch.Tensor, title_lengths: torch.Tensor, has_title: torch.Tensor,
        paragraph_vectors: torch.Tensor, paragraph_example: torch.Tensor,
    ) -> torch.Tensor:
        """One query vector per example [E, 2H]: the max-pooled title states, or, without a title, the mean
        of the example's ``paragraph_vectors`` ([N, 2H]: max-pooled paragraph-LSTM states)."""
        title_vectors = _masked_max(self._states(self.title_lstm, titles, title_lengths), title_lengths)  # [E, 2H]
        if bool(has_title.all()):
            return title_vectors
        sums = torch.zeros_like(title_vectors).index_add_(0, paragraph_example, paragraph_vectors)  # [E, 2H]
        counts = torch.bincount(paragraph_example, minlength=title_vectors.shape[0]).clamp(min=1)  # [E]
        centroids = sums / counts[:, None].to(sums.dtype)
        return torch.where(has_title[:, None], title_vectors, centroids)

    def forward(
        self, *, paragraphs: torch.Tensor, paragraph_lengths: torch.Tensor, paragraph_example: torch.Tensor,
        titles: torch.Tensor, title_lengths: torch.Tensor, has_title: torch.Tensor,
        features: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits [N] of the paragraphs ([N, T] ids, [N] lengths >= 1, [N] example index) given the titles
        ([E, Q] ids, [E] lengths >= 1, [E] bool: has a title) and, when ``config.features`` names some, the
        paragraphs' features [N, F] (:func:`hiersum.data.ranker_data.paragraph_features`)."""
        expected = len(self.config.features)
        found = 0 if features is None else features.shape[-1]
        if found != expected:
            raise ValueError(f"the ranker reads {expected} paragraph features {list(self.config.features)}; "
                             f"found {found}")
        states = self._states(self.paragraph_lstm, paragraphs, paragraph_lengths)  # [N, T', 2H]
        query = self.queries(titles, title_lengths, has_title, _masked_max(states, paragraph_lengths),
                             paragraph_example)  # [E, 2H]
        query_per_token = query[paragraph_example][:, None, :].expand(-1, states.shape[1], -1)  # [N, T', 2H]
        combined = torch.tanh(self.combine(torch.cat([states, query_per_token], dim=-1)))  # [N, T', 2H]
        pooled = _masked_max(self.dropout(combined), paragraph_lengths)  # [N, 2H]
        if expected:
            pooled = torch.cat([pooled, features.to(pooled.dtype)], dim=-1)  # [N, 2H + F]
        return self.score(pooled).squeeze(-1)  # [N]
