"""The hierarchical summarization model (encoder, decoder, output layer)."""

from hiersum.model.decoder import DecoderState, TransformerDecoder
from hiersum.model.decoder_contract import CopySource, Decoder, DecoderOutput
from hiersum.model.encoder import FlatEncoder, HierarchicalEncoder
from hiersum.model.encoder_contract import Encoder, EncoderOutput, PretrainedWeights
from hiersum.model.summarizer import HierSum, TeacherForcedOutput
from hiersum.model.summarizer_state import SummarizerState

__all__ = ["CopySource", "Decoder", "DecoderOutput", "DecoderState", "Encoder",
           "EncoderOutput", "FlatEncoder", "HierSum", "HierarchicalEncoder",
           "PretrainedWeights", "SummarizerState", "TeacherForcedOutput", "TransformerDecoder"]
