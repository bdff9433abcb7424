"""HierSum: hierarchical encoder + transformer decoder + tied output layer (Liu & Lapata 2019).

Dimensions
    B  batch
    P  paragraphs per example
    T  tokens per paragraph
    S  target length
    D  model width
    V  vocabulary
    K  beams

Masks are boolean with True = real token; every tensor is batch-first.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hiersum.config import ModelConfig
from hiersum.generate import STOPPING_RULES, GenerationOutput, StepOutput, beam_search
from hiersum.model.decoder import DecoderState, TransformerDecoder
from hiersum.model.encoder import EncoderOutput, HierarchicalEncoder


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
        self.encoder = HierarchicalEncoder(config, embeddings=embeddings)
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
        self, src: Tensor, src_mask: Tensor, *, return_attention: bool = False
    ) -> EncoderOutput:
        """src: long [B, P, T]; src_mask: bool [B, P, T], True = real token."""
        return self.encoder(src, src_mask, return_attention=return_attention)

    def init_decoder_state(self, encoded: EncoderOutput) -> DecoderState:
        """A decoder state for B rows, with the memory keys/values projected once."""
        return self.decoder.init_state(encoded.memory, encoded.memory_mask)

    def output_log_probs(self, states: Tensor) -> Tensor:
        """Decoder states [..., D] -> log-probabilities [..., V]."""
        return F.log_softmax(self.generator(states), dim=-1)

    def step(self, tokens: Tensor, state: DecoderState) -> StepOutput[DecoderState]:
        """Feed one token per row (long [N]); log p(next) [N, V] and the advanced state."""
        out = self.decoder(tokens.unsqueeze(1), state)  # states (N, 1, D)
        return StepOutput(log_probs=self.output_log_probs(out.states.squeeze(1)), state=out.state)

    def log_probs(self, src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced log-probabilities [B, S, V]: row t is log p(next | tgt_in[:, :t+1], src).

        src: long [B, P, T]; src_mask: bool [B, P, T]; tgt_in: long [B, S] (BOS first). Padding
        in ``tgt_in`` must come after the real tokens (causality keeps it out of earlier rows).
        """
        encoded = self.encode(src, src_mask)
        out = self.decoder(tgt_in, self.init_decoder_state(encoded))  # states (B, S, D)
        return self.output_log_probs(out.states)

    def forward(self, src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> Tensor:
        """Same as :meth:`log_probs`."""
        return self.log_probs(src, src_mask, tgt_in)

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
    ) -> GenerationOutput:
        """Beam-search summaries of a batch (call ``eval()`` first to switch dropout off).

        ``beam_size=1`` is greedy decoding. ``min_length``: EOS is forbidden before this many
        tokens; ``max_length``: at most this many tokens (EOS included). ``stopping``: see
        :mod:`hiersum.generate` (``"official"`` reproduces the official hiersumm search).
        """
        if stopping not in STOPPING_RULES:
            raise ValueError(f"stopping must be one of {STOPPING_RULES}, found {stopping!r}")
        if beam_size < 1:
            raise ValueError(f"beam_size must be >= 1, found {beam_size}")
        state = self.init_decoder_state(self.encode(src, src_mask))
        return beam_search(
            self.step,
            state,
            batch_size=src.size(0),
            beam_size=beam_size,
            bos_id=self.bos_id,
            eos_id=self.eos_id,
            alpha=alpha,
            min_length=min_length,
            max_length=max_length,
            stopping=stopping,
            device=src.device,
        )
