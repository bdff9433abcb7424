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
in log space and fp32 (whatever autocast made of its inputs): log P = logaddexp(log p_gen + log_softmax(logits),
log(1 - p_gen) + log copy), so no vocabulary entry underflows to log 0 where the generator gives it mass.

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
        switch = self.switch(features).float().squeeze(-1)  # (N, L)
        index = copy.ids.unsqueeze(1).expand(B, attention.size(1), M)  # (B', G*L, M)
        copied = attention.new_zeros(B, attention.size(1), logits.size(-1)).scatter_add_(2, index, attention)
        log_generate = F.logsigmoid(switch).unsqueeze(-1) + F.log_softmax(logits.float(), dim=-1)  # (N, L, V)
        log_copy = F.logsigmoid(-switch).unsqueeze(-1) + log_or_minus_inf(copied.view(N, L, -1))  # (N, L, V)
        return CopyOutput(log_probs=torch.logaddexp(log_generate, log_copy), generate_probability=switch.sigmoid(),
                          attention=attention.view(N, L, M))


def log_or_minus_inf(probs: Tensor) -> Tensor:
    """log ``probs`` (>= 0) with -inf at 0 and a zero gradient there (``log`` alone would give inf x 0 = nan)."""
    return torch.where(probs > 0, probs.clamp_min(torch.finfo(probs.dtype).tiny).log(), float("-inf"))
