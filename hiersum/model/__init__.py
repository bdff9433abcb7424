"""The hierarchical summarization model (encoder, decoder, output layer)."""

from hiersum.model.decoder import DecoderState, TransformerDecoder
from hiersum.model.encoder import EncoderOutput, HierarchicalEncoder
from hiersum.model.summarizer import HierSum

__all__ = ["DecoderState", "EncoderOutput", "HierSum", "HierarchicalEncoder", "TransformerDecoder"]
