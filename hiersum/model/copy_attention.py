"""Copy attention (``model.copy_attention``): the pointer-generator of See et al. (2017) over the encoder's memory.

At each target position t, with s_t the decoder's final state, x_t the embedding of the token fed there, m_i the
memory (the encoder's real tokens) and w_i their token ids:

    a_t     = softmax_i((W_q s_t + b_q) . (W_k m_i + b_k) / sqrt(D))    over the real memory positions
    c_t     = sum_i a_ti m_i
    p_gen   = sigmoid(w . [s_t; c_t; x_t] + b)
    P_t(w)  = p_gen softmax(W_o s_t + b_o)_w + (1 - p_gen) sum_{i: w_i = w} a_ti

One dedicated head, not the decoder's cross-attention: scaled_dot_product_attention gives no weights, and a head of
its own lets the copy distribution learn what to point at apart from what the last layer reads. The keys W_k m are
projected once per encoding (:meth:`CopyAttention.init_memory`, kept in the decoder state). The mixture is computed
in fp32 (whatever autocast made of its inputs) as probabilities, the copy mass added in place onto the generator's
(one [N, L, V] softmax, product, scatter and log: these full-vocabulary passes are what copying costs, fewer than
the same mixture in log space with logaddexp), then log(P + tiny): an entry
of probability 0 gets a finite log-probability (-87.3), which label smoothing reads.

The tokenizer is subword: every source token is in the vocabulary, so copying scatters onto vocabulary ids (no
extended vocabulary of source OOVs, as See et al. need for words).

Dimensions
    N  rows (examples, or examples x beams while decoding)
    B' memory entries (examples; N = B' x G, the G beams of an example consecutive)
    L  target positions of the call (all of them when teacher forcing, 1 per step)
    M  memory length
    D  model width
    V  vocabulary
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hiersum.model.cache import CopyMemory


@dataclass
class CopyOutput:
    """What :class:`CopyAttention` gives for the L positions of N rows."""

    log_probs: Tensor
    """[N, L, V] fp32 log-probabilities of the mixture of generating and copying."""
    generate_probability: Tensor
    """[N, L] fp32 p_gen, the weight of generating from the vocabulary (1 - p_gen: copying)."""
    attention: Tensor
    """[N, L, M] fp32 copy attention over the memory (zero at padding)."""


class CopyAttention(nn.Module):
    """The copy attention's parameters (query and key projections, the switch) and the mixture (module docstring).

    Args:
        d_model: D.
    """

    def __init__(self, d_model: int):
        super().__init__()
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.switch = nn.Linear(3 * d_model, 1)

    def forward_flops(self, memory_lengths: Tensor, tgt_mask: Tensor) -> int:
        """Forward FLOPs on the real tokens (``memory_lengths`` long [B], ``tgt_mask`` bool [B, S]): keys 2 M D^2,
        query 2 S D^2, scores and context 4 D sum(S M), switch 6 S D; the scatter onto the vocabulary and the mixture
        are element-wise (:mod:`hiersum.model.flops`)."""
        D = self.query.in_features
        target = tgt_mask.sum(-1).long()  # (B,)
        S, M = int(target.sum()), int(memory_lengths.sum())
        return 2 * M * D * D + 2 * S * D * D + 4 * D * int((target * memory_lengths).sum()) + 6 * S * D

    def init_memory(self, memory: Tensor, ids: Tensor) -> CopyMemory:
        """The copy attention's view of the memory [B', M, D] whose token ids are ``ids`` [B', M] (long)."""
        return CopyMemory(keys=self.key(memory), memory=memory, ids=ids)

    def forward(
        self, states: Tensor, inputs: Tensor, logits: Tensor, copy: CopyMemory, memory_attn_mask: Tensor | None
    ) -> CopyOutput:
        """states: the decoder's final states [N, L, D]; inputs: the embeddings of the tokens fed [N, L, D];
        logits: the output layer's scores [N, L, V]; copy: the memory (row r reads entry r // G); memory_attn_mask:
        bool [B', 1, 1, M], True = real memory token (the decoder state's), or None when every token is real."""
        N, L, D = states.shape
        B, M = copy.ids.shape
        query = self.query(states).reshape(B, -1, D)  # (B', G*L, D): the beams of an example as queries
        scores = (query @ copy.keys.transpose(1, 2)).float() / math.sqrt(D)  # (B', G*L, M)
        if memory_attn_mask is not None:
            scores = scores.masked_fill(~memory_attn_mask.view(B, 1, M), float("-inf"))
        attention = scores.softmax(-1)  # (B', G*L, M) fp32
        context = (attention.to(copy.memory.dtype) @ copy.memory).view(N, L, D)
        features = torch.cat([states, context.to(states.dtype), inputs.to(states.dtype)], -1)  # (N, L, 3*D)
        generate = torch.sigmoid(self.switch(features).float())  # (N, L, 1) p_gen
        probs = F.softmax(logits.float(), dim=-1) * generate  # (N, L, V) generating
        index = copy.ids.unsqueeze(1).expand(B, attention.size(1), M)  # (B', G*L, M)
        copying = attention * (1 - generate).view(B, -1, 1)  # (B', G*L, M)
        probs.view(B, -1, probs.size(-1)).scatter_add_(2, index, copying)  # in place: mul's backward keeps its inputs
        return CopyOutput(log_probs=(probs + torch.finfo(probs.dtype).tiny).log(),
                          generate_probability=generate.squeeze(-1), attention=attention.view(N, L, M))
