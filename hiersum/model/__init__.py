"""The hierarchical summarization model (encoder, decoder, output layer)."""

from hiersum.model.decoder import DecoderState, TransformerDecoder
from hiersum.model.encoder import EncoderOutput, FlatEncoder, HierarchicalEncoder
from hiersum.model.summarizer import HierSum

__all__ = ["DecoderState", "EncoderOutput", "FlatEncoder", "HierSum", "HierarchicalEncoder", "TransformerDecoder"]
