"""The token table of a model that copies out-of-vocabulary words (``model.copy_oov``).

See et al. (2017) and OpenNMT-py (``src_map``) give each example an extended vocabulary: its k-th distinct source word
outside the vocabulary gets the id V + k, the copy distribution covers V + K ids, and a target word that only the
source has is labelled with its extended id. Every such id embeds as ``<unk>``, wherever it is read (the encoder's
source, the decoder's fed tokens, the switch's input): all out-of-vocabulary positions share the one trained
``<unk>`` vector, so the pointer learns to copy what it cannot generate, whatever the string.

:class:`ExtendedEmbedding` is that rule, in the one table the encoder, the decoder and the output layer share; the
ids themselves (the source's and the target's) come from the data (:mod:`hiersum.data.extended_vocabulary`).
"""

from __future__ import annotations

from torch import Tensor, nn


class ExtendedEmbedding(nn.Embedding):
    """An ``nn.Embedding`` [V, D] that embeds any id >= V (an extended id V + k) as ``unk_id``'s row; the same
    parameters and state-dict keys as ``nn.Embedding``.

    Args:
        num_embeddings: V.
        embedding_dim: D.
        unk_id: the vocabulary's ``<unk>``.
        padding_idx: as ``nn.Embedding``'s.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, *, unk_id: int, padding_idx: int | None = None):
        super().__init__(num_embeddings, embedding_dim, padding_idx=padding_idx)
        if not 0 <= unk_id < num_embeddings:
            raise ValueError(f"unk_id={unk_id} is outside the vocabulary [0, {num_embeddings})")
        self.unk_id = unk_id

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 (nn.Embedding's argument name)
        """Embeddings [..., D] of ``input`` [...] (long; ids >= V as ``<unk>``)."""
        return super().forward(input.masked_fill(input >= self.num_embeddings, self.unk_id))
