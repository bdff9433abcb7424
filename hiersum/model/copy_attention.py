"""Copy attention (``model.copy_attention``): the pointer-generator of See et al. (2017) over the encoder's memory.

At each target position t, with s_t the decoder's final state, x_t the embedding of the token fed there, m_i the
memory (the encoder's real tokens) and w_i their token ids:

    a_t     = softmax_i((W_q s_t + b_q) . (W_k m_i + b_k) / sqrt(D))    over the real memory positions
    c_t     = sum_i a_ti m_i
    p_gen   = sigmoid(w . [s_t; c_t; x_t] + b)
    P_t(w)  = p_gen softmax(W_o s_t + b_o)_w + (1 - p_gen) sum_{i: w_i = w} a_ti

Copying points only at real memory tokens that are not special: padding, BOS, EOS (a source's trailing ``</s>``
copied would end the summary) and the paragraph separator of a flat source never receive copy attention
(:attr:`CopyAttention.excluded_ids`, masked once per encoding in :attr:`CopyMemory.copyable`).

One dedicated head, not the decoder's cross-attention: scaled_dot_product_attention gives no weights, and a head of
its own lets the copy distribution learn what to point at apart from what the last layer reads. The keys W_k m are
projected once per encoding (:meth:`CopyAttention.init_memory`, kept in the model's decoding state,
:class:`hiersum.model.summarizer_state.SummarizerState`). The mixture is computed
in fp32 (whatever autocast made of its inputs) as probabilities, then log(P + tiny): an entry of probability 0 gets a
finite log-probability (-87.3). The whole [N, L, V] mixture (:meth:`CopyOutput.log_probs`: one softmax, product,
scatter of the copy mass and log over the vocabulary) is built only where the whole distribution is read (decoding,
validation); the training loss reads the label's probability alone (:meth:`CopyOutput.label_log_probs`: [N, L, M]
work instead of [N, L, V]), its label smoothing taken over the generator's distribution only
(:func:`hiersum.training.loss.copy_nll`): smoothing the mixture would reward every vocabulary entry, and so the
switch for generating, at every step.

By default copying scatters onto vocabulary ids (a subword tokenizer gives every source token one, or ``<unk>``).
With ``model.copy_oov`` the memory's ids may also be extended ids V + k, an example's out-of-vocabulary source words
(:mod:`hiersum.model.extended_embedding`): the mixture then covers V + K ids (K: :attr:`CopyMemory.extended`, the
batch's most; the generator's part is 0 past V), and a label may be one of them.

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
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass
class CopyMemory:
    """What the copy attention reads of the memory, made once per encoding (:meth:`CopyAttention.init_memory`), one
    entry per example (shared by its beams, as the decoder's memory keys/values are)."""

    keys: Tensor
    """[B', M, D] the memory projected by the copy attention's key layer."""
    memory: Tensor
    """[B', M, D] the encoder's memory (the copy attention's values: its context vector)."""
    ids: Tensor
    """[B', M] long, the token id of each memory position (what copying it emits)."""
    copyable: Tensor
    """[B', M] bool, True = a position copying may point at: a real memory token that is not a special token
    (padding, BOS, EOS, the paragraph separator: :attr:`CopyAttention.excluded_ids`)."""
    extended: int = 0
    """K, the extended ids V .. V + K - 1 the mixture covers past the vocabulary (``model.copy_oov``: the most any
    example of the batch holds, counted once per encoding); 0 without."""

    def index_select(self, entries: Tensor) -> CopyMemory:
        """Entries ``entries`` [B''] (long, into the B' entries); the width of the mixture stays."""
        keys, memory, ids, copyable = (tensor.index_select(0, entries)
                                       for tensor in (self.keys, self.memory, self.ids, self.copyable))
        return CopyMemory(keys, memory, ids, copyable, extended=self.extended)


@dataclass
class CopyOutput:
    """What :class:`CopyAttention` gives for the L positions of N rows: the mixture's parts. The whole [N, L, V]
    distribution is made only when asked for (:meth:`log_probs`: decoding, validation); the training loss reads the
    probability of the label alone (:meth:`label_log_probs`), which never builds it."""

    logits: Tensor
    """[N, L, V] the output layer's scores (the generator's part)."""
    generate_probability: Tensor
    """[N, L] fp32 p_gen, the weight of generating from the vocabulary (1 - p_gen: copying)."""
    attention: Tensor
    """[N, L, M] fp32 copy attention over the memory (zero at padding and at the excluded tokens)."""
    ids: Tensor
    """[B', M] long, the memory's token ids (row r of the N reads entry r // G)."""
    coverage_loss: Tensor | None = None
    """With coverage: [N, L] fp32 sum_i min(a_ti, c_ti), the attention each position gives again to what earlier
    positions covered (See et al.'s coverage loss, before its weight); None without coverage."""
    coverage: Tensor | None = None
    """With coverage: [N, M] fp32 the coverage after the call's last position (what the next position starts
    from); None without coverage."""
    extended: int = 0
    """K, the extended ids past the vocabulary the mixture covers (``model.copy_oov``, :attr:`CopyMemory.extended`)."""

    def log_probs(self) -> Tensor:
        """[N, L, V + K] fp32 log-probabilities of the mixture of generating and copying (module docstring; K =
        :attr:`extended`, 0 without ``model.copy_oov``)."""
        N, L, M = self.attention.shape
        B = self.ids.size(0)
        p_gen = self.generate_probability.unsqueeze(-1)  # (N, L, 1)
        probs = F.softmax(self.logits.float(), dim=-1) * p_gen  # (N, L, V) generating
        if self.extended:
            probs = F.pad(probs, (0, self.extended))  # (N, L, V + K): nothing generated past the vocabulary
        index = self.ids.unsqueeze(1).expand(B, N // B * L, M)  # (B', G*L, M)
        copying = (self.attention * (1 - p_gen)).view(B, -1, M)  # (B', G*L, M)
        probs.view(B, -1, probs.size(-1)).scatter_add_(2, index, copying)  # in place: mul's backward keeps its inputs
        return (probs + torch.finfo(probs.dtype).tiny).log()

    def label_log_probs(self, labels: Tensor, generated_log_probs: Tensor) -> Tensor:
        """[N, L] fp32 log P(label) under the mixture, for ``labels`` [N, L] (long), given ``generated_log_probs``
        [N, L] fp32, log q(label) of the generator's softmax at each label (the training loss reads it of the logits
        with its other statistics: :func:`hiersum.training.logit_statistics.logit_statistics`; for an extended label,
        any value): p_gen q(label) + (1 - p_gen) x the copy attention on the memory positions holding the label.
        Equal to ``log_probs().gather(-1, labels)`` up to float rounding, without the [N, L, V] passes (softmax,
        product, scatter, log and their backward). With :attr:`extended` a label may be an extended id (>= V), which
        only copying gives."""
        N, L, M = self.attention.shape
        B, V = self.ids.size(0), self.logits.size(-1)
        generated = generated_log_probs.exp()  # (N, L) q(label)
        if self.extended:
            generated = generated.masked_fill(labels >= V, 0.0)  # an extended id is never generated
        holds_label = self.ids.unsqueeze(1).eq(labels.reshape(B, -1, 1))  # (B', G*L, M)
        copied = (self.attention.view(B, -1, M) * holds_label).sum(-1).view(N, L)  # (N, L)
        p_gen = self.generate_probability
        probability = p_gen * generated + (1 - p_gen) * copied  # (N, L)
        return (probability + torch.finfo(probability.dtype).tiny).log()


class CopyAttention(nn.Module):
    """The copy attention's parameters (query and key projections, the switch) and the mixture (module docstring).

    Args:
        d_model: D.
        excluded_ids: the token ids copying never points at (the special tokens: padding, BOS, EOS, ...).
        coverage: See et al.'s coverage (``model.coverage``): a learned weight w_c of each position's coverage in its
            score, and the coverage loss in :class:`CopyOutput` (:meth:`covered_attention`).
        vocab_size: with ``model.copy_oov``, V: memory ids >= V are extended ids (module docstring); None: the
            memory holds vocabulary ids only.
    """

    excluded_ids: Tensor
    """[E] long: the ids never copied (a buffer, not saved: it moves with the module, the state dict keeps no copy)."""

    def __init__(self, d_model: int, *, excluded_ids: Sequence[int] = (), coverage: bool = False,
                 vocab_size: int | None = None):
        super().__init__()
        self.vocab_size = vocab_size
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.switch = nn.Linear(3 * d_model, 1)
        self.coverage_weight = nn.Parameter(torch.zeros(())) if coverage else None
        """w_c, the weight of a memory position's coverage in its score (``model.coverage``; starts at 0)."""
        self.register_buffer("excluded_ids", torch.tensor(sorted(set(excluded_ids)), dtype=torch.long),
                             persistent=False)

    def forward_flops(self, memory_lengths: Tensor, tgt_mask: Tensor) -> int:
        """Forward FLOPs on the real tokens (``memory_lengths`` long [B], ``tgt_mask`` bool [B, S]): keys 2 M D^2,
        query 2 S D^2, scores and context 4 D sum(S M), switch 6 S D; the scatter onto the vocabulary and the mixture
        are element-wise (:mod:`hiersum.model.flops`)."""
        D = self.query.in_features
        target = tgt_mask.sum(-1).long()  # (B,)
        S, M = int(target.sum()), int(memory_lengths.sum())
        return 2 * M * D * D + 2 * S * D * D + 4 * D * int((target * memory_lengths).sum()) + 6 * S * D

    def init_memory(self, memory: Tensor, ids: Tensor, memory_mask: Tensor) -> CopyMemory:
        """The copy attention's view of the memory [B', M, D] whose token ids are ``ids`` [B', M] (long);
        ``memory_mask`` bool [B', M], True = real token (the encoder's)."""
        copyable = memory_mask & ~torch.isin(ids, self.excluded_ids)  # (B', M)
        extended = 0 if self.vocab_size is None or ids.numel() == 0 else max(0, int(ids.max()) + 1 - self.vocab_size)
        return CopyMemory(keys=self.key(memory), memory=memory, ids=ids, copyable=copyable, extended=extended)

    def forward(
        self, states: Tensor, inputs: Tensor, logits: Tensor, copy: CopyMemory, coverage: Tensor | None = None
    ) -> CopyOutput:
        """states: the decoder's final states [N, L, D]; inputs: the embeddings of the tokens fed [N, L, D];
        logits: the output layer's scores [N, L, V]; copy: the memory (row r reads entry r // G); coverage (with
        ``model.coverage``, required): [N, M] fp32, the attention each memory position received before the call's
        first position (zeros at the start). A row whose memory has no copyable position copies nothing (its
        attention is zero)."""
        N, L, D = states.shape
        B, M = copy.ids.shape
        query = self.query(states).reshape(B, -1, D)  # (B', G*L, D): the beams of an example as queries
        scores = (query @ copy.keys.transpose(1, 2)).float() / math.sqrt(D)  # (B', G*L, M)
        blocked = ~copy.copyable.view(B, 1, M)  # (B', 1, M)
        coverage_loss = None
        if self.coverage_weight is None:
            attention = masked_softmax(scores, blocked).view(N, L, M)
        else:
            if coverage is None:
                raise ValueError("model.coverage=true needs the coverage so far (SummarizerState.coverage)")
            blocked_rows = blocked.repeat_interleave(N // B, dim=0)  # (N, 1, M)
            attention, coverage_loss, coverage = self.covered_attention(scores.view(N, L, M), blocked_rows, coverage)
        context = (attention.view(B, -1, M).to(copy.memory.dtype) @ copy.memory).view(N, L, D)
        features = torch.cat([states, context.to(states.dtype), inputs.to(states.dtype)], -1)  # (N, L, 3*D)
        generate = torch.sigmoid(self.switch(features).float())  # (N, L, 1) p_gen
        return CopyOutput(logits=logits, generate_probability=generate.squeeze(-1), attention=attention, ids=copy.ids,
                          coverage_loss=coverage_loss, coverage=coverage if self.coverage_weight is not None else None,
                          extended=copy.extended)

    def covered_attention(self, scores: Tensor, blocked: Tensor, coverage: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The attention of L positions in order, each position's scores [N, L, M] raised by w_c times the coverage so
        far (``coverage`` [N, M] before the first); ``blocked`` bool [N, 1, M]. Returns the attention [N, L, M], the
        coverage loss sum_i min(a_ti, c_ti) [N, L] and the coverage after the last position [N, M]. Sequential in L
        (each position reads the ones before): [N, M] work a position, as a decoding step."""
        attentions, losses = [], []
        for t in range(scores.size(1)):
            attention = masked_softmax(scores[:, t : t + 1] + self.coverage_weight * coverage.unsqueeze(1), blocked)
            attention = attention.squeeze(1)  # (N, M)
            losses.append(torch.minimum(attention, coverage).sum(-1))  # (N,)
            coverage = coverage + attention
            attentions.append(attention)
        return torch.stack(attentions, 1), torch.stack(losses, 1), coverage


def masked_softmax(scores: Tensor, blocked: Tensor) -> Tensor:
    """Softmax of ``scores`` [..., M] over the positions ``blocked`` (bool, broadcast) leaves out; a row with every
    position blocked is zero (masked_fill after the softmax: its NaN goes)."""
    return scores.masked_fill(blocked, float("-inf")).softmax(-1).masked_fill(blocked, 0.0)
