"""HierSum: an encoder of the registry (hierarchical, flat, ...) + a decoder of the registry (transformer) + tied
output layer (Liu & Lapata 2019).

The network knows nothing of the search: :func:`hiersum.decoding.generate` drives its :meth:`HierSum.step`. It
knows its encoder only through :mod:`hiersum.model.encoder_contract` (the :class:`Encoder` protocol and the optional
:class:`PretrainedWeights` capability) and its decoder only through :mod:`hiersum.model.decoder_contract` (the
:class:`Decoder` protocol). Teacher forcing is one call, ``model(src, src_mask, tgt_in)``
(:meth:`HierSum.forward`), which gives a :class:`TeacherForcedOutput`.

Dimensions
    B  batch
    P  paragraphs per example
    T  tokens per paragraph
    L  source length of a flat model (``model.encoder=flat``): src is [B, L] instead of [B, P, T]
    S  target length
    D  model width
    V  vocabulary
    K  beams

Masks are boolean with True = real token; every tensor is batch-first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hiersum.config import ModelConfig
from hiersum.data.packing import PackedGrid
from hiersum.model import decoder_contract, encoder_contract
from hiersum.model.copy_attention import CopyAttention, CopyOutput
from hiersum.model.decoder_registry import build_decoder
from hiersum.model.encoder_contract import EncoderOutput, PretrainedWeights
from hiersum.model.encoder_registry import build_encoder, resolve_model_config
from hiersum.model.extended_embedding import ExtendedEmbedding
from hiersum.model.hub import SummarizerHubMixin
from hiersum.model.summarizer_state import SummarizerState, SummarizerStep


@dataclass
class TeacherForcedOutput:
    """What teacher forcing gives (:meth:`HierSum.forward`)."""

    logits: Tensor
    """[B, S, V] the output layer's unnormalised scores: row t scores the token after ``tgt_in[:, :t+1]``. With
    ``model.copy_attention`` they are the generator's part of the mixture only (:attr:`log_probs` is the
    next-token distribution)."""
    encoded: EncoderOutput
    """The encoder's output for the source (its pooling weights and attention when ``return_attention``)."""
    copy: CopyOutput | None = None
    """With ``model.copy_attention``: the mixture's log-probabilities, p_gen and the copy attention; else None."""

    @cached_property
    def log_probs(self) -> Tensor:
        """[B, S, V] the log-probabilities of the next token: the log-softmax of :attr:`logits`, or with
        ``model.copy_attention`` the mixture of generating and copying (``copy.log_probs()``). Computed once, when
        first read (the training loss of a model without copying reads the logits only)."""
        return F.log_softmax(self.logits, dim=-1) if self.copy is None else self.copy.log_probs()


class HierSum(nn.Module, SummarizerHubMixin):
    """The hierarchical summarizer.

    One embedding table [V, D] is shared by the encoder, the decoder and the output layer
    (whose bias is its own); every parameter with more than one dimension is Xavier-uniform
    initialised, as in the official code. With ``config.copy_attention`` a
    :class:`~hiersum.model.copy_attention.CopyAttention` mixes copying source tokens into every next-token
    distribution (a pointer-generator); without it the network has no copy parameter.

    ``save_pretrained(directory)`` / ``HierSum.from_pretrained(directory)``: the network as a Hugging Face model
    directory (``model.safetensors`` + ``config.json``; :mod:`hiersum.model.hub`).

    Args:
        config: model sizes; ``config.encoder`` names an entry of :data:`hiersum.model.encoder_registry.ENCODERS`,
            ``config.decoder`` one of :data:`hiersum.model.decoder_registry.DECODERS`; the encoder may complete it
            (:func:`resolve_model_config`; ``self.config`` is the completed one).
        vocab_size: V.
        pad_id: the padding token's id (official SentencePiece model: 6).
        bos_id: the begin-of-summary token's id (official: 4).
        eos_id: the end-of-summary token's id (official: 5).
        separator_id: the id joining paragraphs in a flat source (the tokenizer's ``<p>``), never a copy target as
            padding, BOS and EOS are not; None (checkpoints of earlier versions): those three only.
        unk_id: the vocabulary's ``<unk>`` (None: unknown, as in checkpoints of earlier versions); needed by
            ``model.copy_oov``, under which the extended ids V + k embed as it (:mod:`hiersum.model.extended_embedding`)
            and it is neither generated nor copied.
    """

    def __init__(
        self, config: ModelConfig, *, vocab_size: int, pad_id: int, bos_id: int, eos_id: int,
        separator_id: int | None = None, unk_id: int | None = None,
    ):
        super().__init__()
        special = (("pad_id", pad_id), ("bos_id", bos_id), ("eos_id", eos_id), ("separator_id", separator_id),
                   ("unk_id", unk_id))
        for name, value in special:
            if value is not None and not 0 <= value < vocab_size:
                raise ValueError(f"{name}={value} is outside the vocabulary [0, {vocab_size})")
        config = resolve_model_config(config)
        self.config = config
        self.vocab_size = vocab_size
        self.pad_id, self.bos_id, self.eos_id, self.separator_id = pad_id, bos_id, eos_id, separator_id
        self.unk_id = unk_id
        embeddings = self._embeddings(config, vocab_size)
        self.encoder = build_encoder(config, embeddings=embeddings)
        self.decoder = build_decoder(config, embeddings=embeddings)
        self.generator = nn.Linear(config.d_model, vocab_size)
        self.generator.weight = embeddings.weight
        excluded = (pad_id, bos_id, eos_id, *([] if separator_id is None else [separator_id]),
                    *([unk_id] if config.copy_oov else []))
        self.copy_attention = (CopyAttention(config.d_model, excluded_ids=excluded, coverage=config.coverage,
                                             vocab_size=vocab_size if config.copy_oov else None)
                               if config.copy_attention else None)
        # the compiled static_step_log_probs (compile_step), called with the model first; None: eager
        self.compiled_step: Callable[[HierSum, Tensor, SummarizerState, Tensor],
                                     tuple[Tensor, Tensor | None]] | None = None
        self.reset_parameters()

    def _embeddings(self, config: ModelConfig, vocab_size: int) -> nn.Embedding:
        """The table [V, D] the encoder, the decoder and the output layer share: with ``model.copy_oov`` one that
        embeds the extended ids as ``<unk>`` (:class:`ExtendedEmbedding`)."""
        if not config.copy_oov:
            return nn.Embedding(vocab_size, config.d_model, padding_idx=self.pad_id)
        if self.unk_id is None:
            raise ValueError("model.copy_oov=true needs the vocabulary's <unk> id (unk_id), which this network was "
                             "not given (a checkpoint of an earlier version, or a tokenizer without <unk>)")
        return ExtendedEmbedding(vocab_size, config.d_model, unk_id=self.unk_id, padding_idx=self.pad_id)

    @property
    def special_ids(self) -> tuple[int, ...]:
        """The special tokens' ids the network knows: padding, BOS, EOS, the paragraph separator and ``<unk>``."""
        return tuple(i for i in (self.pad_id, self.bos_id, self.eos_id, self.separator_id, self.unk_id)
                     if i is not None)

    @property
    def forbidden_ids(self) -> tuple[int, ...]:
        """The ids no summary holds (the search never chooses them): padding and BOS, and with ``model.copy_oov``
        ``<unk>`` (an out-of-vocabulary source word is copied as its extended id)."""
        unknown = (self.unk_id,) if self.config.copy_oov and self.unk_id is not None else ()
        return (self.pad_id, self.bos_id, *unknown)

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Compile the repeated blocks in place, the torchtune way: every layer of the encoder's ``layers``
        (the encoder contract; an inter layer's pooling included), every decoder layer;
        arguments as :func:`torch.compile`. The parameters stay where they are, so ``state_dict()`` keys
        are unchanged (no ``_orig_mod.``) and checkpoints move freely between compiled and eager models.

        The packed layout is made outside (``collate``), bucket widths come from a fixed ladder, and no
        block reads a tensor's value into Python, so a training epoch compiles a bounded number of graphs
        (tests/model/test_compile.py). Not the whole model: the embedding, the bucket loop and the loss
        stay eager (what changes from batch to batch is there). Sizes are dynamic from the first batch
        (``dynamic=True`` unless given): every batch of a ragged corpus has other sizes, and compiling each
        block for the first sizes only to recompile it when they change is wasted time.
        """
        kwargs.setdefault("dynamic", True)
        for block in self.compiled_blocks():
            block.compile(*args, **kwargs)

    def recompute_encoder(self, enabled: bool = True) -> None:
        """Activation checkpointing of the encoder's layers in training (``activation_checkpointing=true``): their
        activations are recomputed in the backward pass, a run of whole paragraphs at a time past
        :data:`hiersum.model.encoder.CHUNK_ROWS` rows, instead of kept; what lets a training step take hundreds of
        thousands of source tokens (docs/model.md). Costs about one more forward of the encoder; the gradients are
        unchanged (to float rounding past that size). An encoder whose layers cannot (the flat one) is refused."""
        layers = [layer for layer in self.encoder.layers if hasattr(layer, "recompute")]
        if not layers:
            raise ValueError(f"model.encoder={self.config.encoder} has no layers that recompute their activations "
                             "(activation_checkpointing=true is for the hierarchical and pretrained encoders)")
        for layer in layers:
            layer.recompute = enabled

    def compiled_blocks(self) -> list[nn.Module]:
        """What :meth:`compile` compiles: the encoder's ``layers`` (part of the encoder contract) and the
        decoder's."""
        return [*self.encoder.layers, *self.decoder.layers]

    def forward_flops(self, src_mask: Tensor, tgt_mask: Tensor) -> int | None:
        """The forward FLOPs on the real tokens (``src_mask`` bool [B, P, T], ``tgt_mask`` bool [B, S]): what the
        encoder and the decoder count (their optional capabilities ``EncoderCountsFlops`` and ``DecoderCountsFlops``),
        the output projection 2 S D V and the copy attention; None when the encoder or the decoder does not count
        (:mod:`hiersum.model.flops`)."""
        if not (isinstance(self.encoder, encoder_contract.EncoderCountsFlops)
                and isinstance(self.decoder, decoder_contract.DecoderCountsFlops)):
            return None
        memory_lengths = src_mask.flatten(1).sum(-1).long()  # (B,) one memory position per real source token
        S = int(tgt_mask.sum())
        total = (self.encoder.forward_flops(src_mask) + self.decoder.forward_flops(memory_lengths, tgt_mask)
                 + 2 * S * self.generator.in_features * self.generator.out_features)
        if self.copy_attention is not None:
            total += self.copy_attention.forward_flops(memory_lengths, tgt_mask)
        return total

    def pretrained_parameters(self) -> list[nn.Parameter]:
        """The parameters that come from a pretrained model: those of an encoder with the
        :class:`~hiersum.model.encoder_contract.PretrainedWeights` capability; none for the others."""
        return list(self.encoder.pretrained_parameters()) if isinstance(self.encoder, PretrainedWeights) else []

    def reset_parameters(self) -> None:
        """Xavier-uniform for every parameter with more than one dimension (embeddings included), except the
        pretrained ones (:meth:`pretrained_parameters`); then an encoder with pretrained weights may set the
        decoder's embeddings (``model.copy_decoder_embeddings``)."""
        pretrained = {id(parameter) for parameter in self.pretrained_parameters()}
        for parameter in self.parameters():
            if parameter.dim() > 1 and id(parameter) not in pretrained:
                nn.init.xavier_uniform_(parameter)
        if isinstance(self.encoder, PretrainedWeights):
            self.encoder.initialise_decoder_embeddings(self.decoder.embeddings)

    def encode(
        self,
        src: Tensor,
        src_mask: Tensor,
        *,
        paragraph_graph: Tensor | None = None,
        return_attention: bool = False,
        layout: PackedGrid | None = None,
    ) -> EncoderOutput:
        """The encoder's output (:class:`~hiersum.model.encoder_contract.Encoder`): src long [B, P, T] ([B, L]
        flat); src_mask bool, same shape, True = real token; paragraph_graph float [B, P, P], needed when
        ``config.graph`` is not ``none``; layout: the packed layout of ``src_mask`` made beforehand
        (``Batch.layout``), or None (an encoder that packs the grid makes it)."""
        return self.encoder(src, src_mask, paragraph_graph=paragraph_graph, return_attention=return_attention,
                            layout=layout)

    def init_decoder_state(self, encoded: EncoderOutput, *, cache_capacity: int | None = 0) -> SummarizerState:
        """The state decoding starts from, for B rows (:class:`~hiersum.model.summarizer_state.SummarizerState`):
        the decoder's (:meth:`hiersum.model.decoder_contract.Decoder.init_state`: the memory keys/values projected
        once and room for ``cache_capacity`` target positions in the self-attention cache, None: no cache). A cached
        state carries the step's weights (:class:`~hiersum.model.cache.StepWeights`: stacked self-attention
        projections, the output weight transposed), made here from the current parameters. With
        ``model.copy_attention`` it also carries the copy attention's keys of the memory and the memory's token ids
        (:class:`~hiersum.model.copy_attention.CopyMemory`), with ``model.coverage`` the coverage (zeros)."""
        decoder = self.decoder.init_state(encoded.memory, encoded.memory_mask, cache_capacity=cache_capacity)
        if decoder.step_weights is not None:
            output = (self.generator.weight.t().contiguous(), self.generator.bias)  # (D, V), (V,)
            decoder = replace(decoder, step_weights=replace(decoder.step_weights, output=output))
        if self.copy_attention is None:
            return SummarizerState(decoder)
        if encoded.memory_ids is None:
            raise ValueError(f"model.copy_attention=true needs the token ids of the memory, which "
                             f"model.encoder={self.config.encoder} does not give (EncoderOutput.memory_ids)")
        copy = self.copy_attention.init_memory(encoded.memory, encoded.memory_ids, encoded.memory_mask)
        coverage = torch.zeros(copy.ids.shape, device=copy.ids.device) if self.config.coverage else None  # (B, M) fp32
        return SummarizerState(decoder, copy=copy, coverage=coverage)

    def output_logits(self, states: Tensor) -> Tensor:
        """Decoder states [..., D] -> unnormalised scores (logits) [..., V]."""
        return self.generator(states)

    def next_log_probs(self, states: Tensor, tokens: Tensor, state: SummarizerState) -> Tensor:
        """log p(next) [N, L, V] after the decoder's states [N, L, D] of ``tokens`` [N, L] (long): the output layer's
        log-softmax, or with ``model.copy_attention`` the mixture with copying from ``state``'s memory."""
        return self.next_distribution(states, tokens, state)[0]

    def next_distribution(self, states: Tensor, tokens: Tensor, state: SummarizerState) -> tuple[Tensor, Tensor | None]:
        """:meth:`next_log_probs` [N, L, V] and, with ``model.copy_attention``, the copy attention over the memory
        [N, L, M] (None without copying)."""
        logits = self.output_logits(states)  # (N, L, V)
        if self.copy_attention is None:
            return F.log_softmax(logits, dim=-1), None
        copy = self.copy_output(states, tokens, state, logits)
        return copy.log_probs(), copy.attention

    def copy_output(self, states: Tensor, tokens: Tensor, state: SummarizerState, logits: Tensor) -> CopyOutput:
        """The copy attention (``model.copy_attention``) over ``state``'s memory for the decoder's states
        [N, L, D] of ``tokens`` [N, L], mixed with the output layer's ``logits`` [N, L, V]."""
        if self.copy_attention is None or state.copy is None:
            raise ValueError("copying needs model.copy_attention=true and a state made by its init_decoder_state")
        inputs = self.decoder.embeddings(tokens)  # (N, L, D)
        return self.copy_attention(states, inputs, logits, state.copy, state.coverage)

    def step(self, tokens: Tensor, state: SummarizerState) -> SummarizerStep:
        """Feed one token per row (long [N]); log p(next) [N, V] and the advanced state."""
        out = self.decoder(tokens.unsqueeze(1), state.decoder)  # states (N, 1, D)
        log_probs, attention = self._step_distribution(out.states.squeeze(1), tokens, state)  # (N, V), (N, M)
        return SummarizerStep(log_probs=log_probs, state=replace(state, decoder=out.state), attention=attention)

    def _step_distribution(self, states: Tensor, tokens: Tensor,
                           state: SummarizerState) -> tuple[Tensor, Tensor | None]:
        """Decoder states [N, D] of ``tokens`` [N] -> log-probabilities [N, V], with the state's transposed output
        weight, and the copy attention [N, M] (None without copying)."""
        step_weights = state.decoder.step_weights
        output = None if step_weights is None else step_weights.output
        if output is None:
            logits = self.output_logits(states)
        else:
            weight_t, bias = output
            logits = torch.addmm(bias, states, weight_t)  # (N, V)
        if self.copy_attention is None:
            return F.log_softmax(logits, dim=-1), None
        copy = self.copy_output(states.unsqueeze(1), tokens.unsqueeze(1), state, logits.unsqueeze(1))
        if copy.coverage is not None and state.coverage is not None:
            state.coverage.copy_(copy.coverage)  # in place: the state this step continues (consumed once)
        return copy.log_probs().squeeze(1), copy.attention.squeeze(1)  # (N, V), (N, M)

    def static_step(self, tokens: Tensor, state: SummarizerState) -> SummarizerStep:
        """:meth:`step` over a fixed-size cache: attends over all of its positions (those not yet written
        masked out), so every step has the same shapes and one compiled graph (:meth:`compile_step`) serves
        them all, as litgpt's and Hugging Face's static caches. The state's cache must have room for every
        step (``init_decoder_state(cache_capacity=max_length + 1)``); it is never grown."""
        cache = state.decoder.self_attn
        if cache is None or state.length >= cache.capacity:
            capacity = None if cache is None else cache.capacity
            raise ValueError(f"a static step needs a cache with room for position {state.length}, found capacity "
                             f"{capacity}")
        position = torch.full((1,), state.length, dtype=torch.long, device=tokens.device)  # (1,)
        step = self.compiled_step or HierSum.static_step_log_probs
        tokens = tokens.contiguous()  # (N,): the search's last column has a stride that changes every step
        advanced = replace(state, decoder=replace(state.decoder, length=state.length + 1))
        log_probs, attention = step(self, tokens, state, position)
        return SummarizerStep(log_probs=log_probs, state=advanced, attention=attention)

    def static_step_log_probs(self, tokens: Tensor, state: SummarizerState,
                              position: Tensor) -> tuple[Tensor, Tensor | None]:
        """The work of :meth:`static_step` (what :meth:`compile_step` compiles): log p(next) [N, V] of
        ``tokens`` [N] at ``position`` (long [1]), writing their keys/values into the state's cache, and the copy
        attention [N, M] (None without copying)."""
        states = self.decoder.static_forward(tokens.unsqueeze(1), state.decoder, position)  # (N, 1, D)
        return self._step_distribution(states.squeeze(1), tokens, state)

    def compile_step(self, **options: Any) -> None:
        """Compile :meth:`static_step`'s per-step call (once; later calls keep it) with :func:`torch.compile`
        ``options``; ``mode`` defaults to ``"reduce-overhead"`` (CUDA graphs) on CUDA, the default mode
        elsewhere. The parameters and ``state_dict()`` are untouched. A decoding run compiles at most three
        graphs: the first count of live examples, a dynamic count once examples finish, and a count of 1
        (dynamo specialises sizes 0 and 1)."""
        if self.compiled_step is None:
            options.setdefault("mode", "reduce-overhead" if self.generator.weight.is_cuda else None)
            # the function, not the bound method: a copy of the model must not call this one
            self.compiled_step = torch.compile(HierSum.static_step_log_probs, **options)

    def forward(
        self, src: Tensor, src_mask: Tensor, tgt_in: Tensor, *, paragraph_graph: Tensor | None = None,
        layout: PackedGrid | None = None, return_attention: bool = False,
    ) -> TeacherForcedOutput:
        """Teacher forcing, the one call: the logits [B, S, V] of every next token of ``tgt_in`` and the encoder's
        output (``.log_probs``: the next-token log-probabilities). Row t of the logits scores the token after
        ``tgt_in[:, :t+1]``. With ``model.copy_attention`` the log-probabilities are the copy mixture's (``.copy``).

        src: long [B, P, T] ([B, L] flat); src_mask: bool, same shape, True = real token; tgt_in: long [B, S]
        (BOS first). Padding in ``tgt_in`` must come after the real tokens (causality keeps it out of earlier
        rows). paragraph_graph, layout and return_attention as in :meth:`encode`.
        """
        encoded = self.encode(src, src_mask, paragraph_graph=paragraph_graph, return_attention=return_attention,
                              layout=layout)
        state = self.init_decoder_state(encoded, cache_capacity=None)
        out = self.decoder(tgt_in, state.decoder)  # states (B, S, D)
        logits = self.output_logits(out.states)  # (B, S, V)
        if self.copy_attention is None:
            return TeacherForcedOutput(logits=logits, encoded=encoded)
        copy = self.copy_output(out.states, tgt_in, state, logits)
        return TeacherForcedOutput(logits=logits, encoded=encoded, copy=copy)
