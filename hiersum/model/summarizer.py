"""HierSum: hierarchical (or flat) encoder + transformer decoder + tied output layer (Liu & Lapata 2019).

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

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hiersum.config import ModelConfig
from hiersum.generate import STOPPING_RULES, GenerationOutput, StepOutput, beam_search, greedy_search
from hiersum.model.decoder import DecoderState, TransformerDecoder
from hiersum.model.encoder import EncoderOutput, FlatEncoder, HierarchicalEncoder


@dataclass
class PrefixState:
    """Decoding state without the self-attention cache: the whole prefix is fed again at each step
    (for benchmarks and to check the cache; the memory keys/values are still projected once)."""

    prefix: Tensor
    """[N, S] long, the tokens fed so far (BOS first)."""
    start: DecoderState
    """The state before any target token (it keeps no self-attention cache)."""

    def tile(self, beam_size: int) -> PrefixState:
        return PrefixState(self.prefix.repeat_interleave(beam_size, 0), self.start.tile(beam_size))

    def reorder_beams(self, indices: Tensor) -> PrefixState:
        return PrefixState(self.prefix.index_select(0, indices), self.start.reorder_beams(indices))

    def select_examples(self, examples: Tensor) -> PrefixState:
        rows = self.start.rows_of(examples)
        return PrefixState(self.prefix.index_select(0, rows), self.start.select_examples(examples))


class HierSum(nn.Module):
    """The hierarchical summarizer.

    One embedding table [V, D] is shared by the encoder, the decoder and the output layer
    (whose bias is its own); every parameter with more than one dimension is Xavier-uniform
    initialised, as in the official code.

    Args:
        config: model sizes.
        vocab_size: V.
        pad_id, bos_id, eos_id: special token ids (official SentencePiece model: 6, 4, 5).
    """

    def __init__(
        self, config: ModelConfig, *, vocab_size: int, pad_id: int, bos_id: int, eos_id: int
    ):
        super().__init__()
        for name, value in (("pad_id", pad_id), ("bos_id", bos_id), ("eos_id", eos_id)):
            if not 0 <= value < vocab_size:
                raise ValueError(f"{name}={value} is outside the vocabulary [0, {vocab_size})")
        self.config = config
        self.vocab_size = vocab_size
        self.pad_id, self.bos_id, self.eos_id = pad_id, bos_id, eos_id
        embeddings = nn.Embedding(vocab_size, config.d_model, padding_idx=pad_id)
        encoder = FlatEncoder if config.encoder == "flat" else HierarchicalEncoder
        self.encoder = encoder(config, embeddings=embeddings)
        self.decoder = TransformerDecoder(config, embeddings=embeddings)
        self.generator = nn.Linear(config.d_model, vocab_size)
        self.generator.weight = embeddings.weight
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Xavier-uniform for every parameter with more than one dimension (embeddings included)."""
        for parameter in self.parameters():
            if parameter.dim() > 1:
                nn.init.xavier_uniform_(parameter)

    def encode(
        self,
        src: Tensor,
        src_mask: Tensor,
        *,
        paragraph_graph: Tensor | None = None,
        return_attention: bool = False,
    ) -> EncoderOutput:
        """src: long [B, P, T] ([B, L] flat); src_mask: bool, same shape, True = real token;
        paragraph_graph: float [B, P, P], needed when ``config.graph`` is not ``none``."""
        return self.encoder(src, src_mask, paragraph_graph=paragraph_graph, return_attention=return_attention)

    def init_decoder_state(self, encoded: EncoderOutput, *, cache_capacity: int | None = 0) -> DecoderState:
        """A decoder state for B rows, with the memory keys/values projected once and room for
        ``cache_capacity`` target positions in the self-attention cache (None: no cache)."""
        return self.decoder.init_state(encoded.memory, encoded.memory_mask, cache_capacity=cache_capacity)

    def output_log_probs(self, states: Tensor) -> Tensor:
        """Decoder states [..., D] -> log-probabilities [..., V]."""
        return F.log_softmax(self.generator(states), dim=-1)

    def step(self, tokens: Tensor, state: DecoderState) -> StepOutput[DecoderState]:
        """Feed one token per row (long [N]); log p(next) [N, V] and the advanced state."""
        out = self.decoder(tokens.unsqueeze(1), state)  # states (N, 1, D)
        return StepOutput(log_probs=self.output_log_probs(out.states.squeeze(1)), state=out.state)

    def step_without_cache(self, tokens: Tensor, state: PrefixState) -> StepOutput[PrefixState]:
        """Like :meth:`step`, but runs the decoder over the whole prefix (no self-attention cache)."""
        prefix = torch.cat([state.prefix, tokens.unsqueeze(1)], 1)  # (N, S+1)
        out = self.decoder(prefix, state.start)  # states (N, S+1, D)
        return StepOutput(log_probs=self.output_log_probs(out.states[:, -1]), state=PrefixState(prefix, state.start))

    def log_probs(
        self, src: Tensor, src_mask: Tensor, tgt_in: Tensor, *, paragraph_graph: Tensor | None = None
    ) -> Tensor:
        """Teacher-forced log-probabilities [B, S, V]: row t is log p(next | tgt_in[:, :t+1], src).

        src: long [B, P, T] ([B, L] flat); src_mask: bool, same shape; tgt_in: long [B, S] (BOS
        first). Padding in ``tgt_in`` must come after the real tokens (causality keeps it out of
        earlier rows).
        """
        encoded = self.encode(src, src_mask, paragraph_graph=paragraph_graph)
        return self.decode_log_probs(encoded, tgt_in)

    def decode_log_probs(self, encoded: EncoderOutput, tgt_in: Tensor) -> Tensor:
        """Teacher-forced log-probabilities [B, S, V] of ``tgt_in`` [B, S] given an encoder output."""
        out = self.decoder(tgt_in, self.init_decoder_state(encoded, cache_capacity=None))  # states (B, S, D)
        return self.output_log_probs(out.states)

    def forward(
        self, src: Tensor, src_mask: Tensor, tgt_in: Tensor, *, paragraph_graph: Tensor | None = None
    ) -> Tensor:
        """Same as :meth:`log_probs`."""
        return self.log_probs(src, src_mask, tgt_in, paragraph_graph=paragraph_graph)

    @torch.no_grad()
    def generate(
        self,
        src: Tensor,
        src_mask: Tensor,
        *,
        beam_size: int = 5,
        alpha: float = 0.0,
        min_length: int = 0,
        max_length: int = 100,
        stopping: str = "official",
        no_repeat_ngram_size: int = 0,
        n_best: int = 1,
        greedy: bool = False,
        max_steps: int | None = None,
        use_cache: bool = True,
        paragraph_graph: Tensor | None = None,
    ) -> GenerationOutput:
        """Beam-search summaries of a batch (call ``eval()`` first to switch dropout off).

        ``beam_size=1`` is greedy decoding through the beam search; ``greedy=True`` runs
        :func:`~hiersum.generate.greedy_search` instead (``beam_size`` ignored, one hypothesis).
        ``min_length``: EOS is forbidden before this many tokens; ``max_length``: at most this many
        tokens (EOS included); ``max_steps``: hard cap on decoding steps, over both (None: no cap).
        ``stopping``: see :mod:`hiersum.generate` (``"official"`` reproduces the official hiersumm
        search). ``no_repeat_ngram_size``: n-gram blocking (3 = trigram blocking; 0 = off).
        ``n_best``: hypotheses per example in ``GenerationOutput.n_best`` (<= ``beam_size``).
        ``use_cache=False`` recomputes the decoder over the whole prefix at every step.
        ``paragraph_graph``: float [B, P, P], needed when ``config.graph`` is not ``none``.
        """
        if stopping not in STOPPING_RULES:
            raise ValueError(f"stopping must be one of {STOPPING_RULES}, found {stopping!r}")
        if beam_size < 1:
            raise ValueError(f"beam_size must be >= 1, found {beam_size}")
        if max_steps is not None:
            if max_steps < 1:
                raise ValueError(f"max_steps must be >= 1, found {max_steps}")
            max_length, min_length = min(max_length, max_steps), min(min_length, max_steps)
        encoded = self.encode(src, src_mask, paragraph_graph=paragraph_graph)
        state = self.init_decoder_state(encoded, cache_capacity=max_length if use_cache else None)
        step = self.step
        if not use_cache:
            empty = torch.empty(src.size(0), 0, dtype=torch.long, device=src.device)  # (B, 0)
            state, step = PrefixState(empty, state), self.step_without_cache
        common = dict(
            batch_size=src.size(0), bos_id=self.bos_id, eos_id=self.eos_id, alpha=alpha,
            min_length=min_length, max_length=max_length, no_repeat_ngram_size=no_repeat_ngram_size,
            device=src.device,
        )
        if greedy:
            if n_best != 1:
                raise ValueError(f"greedy search returns one hypothesis; found n_best={n_best}")
            return greedy_search(step, state, **common)
        return beam_search(step, state, beam_size=beam_size, stopping=stopping, n_best=n_best, **common)
