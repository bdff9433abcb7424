"""The decoder contract (hiersum.model.decoder_contract) and registry (hiersum.model.decoder_registry): HierSum
builds its decoder through ``model.decoder``, takes another registered one, and refuses what does not satisfy it."""

from __future__ import annotations

from dataclasses import asdict

import pytest
import torch
from torch import Tensor, nn

from hiersum.config import ModelConfig
from hiersum.decoding import GenerationOptions, generate
from hiersum.errors import UsageError
from hiersum.model import DecoderState, HierSum, TransformerDecoder
from hiersum.model.decoder_contract import DecoderOutput, check_decoder
from hiersum.model.decoder_registry import DECODERS, DecoderSpec, build_decoder, register_decoder, unregister_decoder
from tests.helpers.model import BOS, EOS, PAD, VOCAB, make_batch, make_model, tiny_config


class RecordingDecoder(TransformerDecoder):
    """The transformer decoder, recording the length of the state of every call."""

    def __init__(self, config: ModelConfig, *, embeddings: nn.Embedding):
        super().__init__(config, embeddings=embeddings)
        self.calls: list[int] = []

    def forward(self, tokens: Tensor, state: DecoderState) -> DecoderOutput:
        self.calls.append(state.length)
        return super().forward(tokens, state)


class NoStaticForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = nn.Embedding(4, 2)
        self.layers = nn.ModuleList()

    def init_state(self, memory: Tensor, memory_mask: Tensor, *, cache_capacity: int | None = 0) -> DecoderState:
        raise AssertionError("never called")


class WithoutCopyPart(TransformerDecoder):
    """The transformer decoder without ``d_model``: a whole :class:`Decoder`, but not the copy part (never run)."""

    def __init__(self, config: ModelConfig, *, embeddings: nn.Embedding):
        super().__init__(config, embeddings=embeddings)
        del self.d_model


class WideEmbeddings(TransformerDecoder):
    """The transformer decoder embedding the fed tokens with a table of its own, twice as wide as the model."""

    def __init__(self, config: ModelConfig, *, embeddings: nn.Embedding):
        super().__init__(config, embeddings=nn.Embedding(VOCAB, 2 * config.d_model))


@pytest.fixture()
def recording():
    register_decoder("recording", DecoderSpec(RecordingDecoder))
    yield
    unregister_decoder("recording")


def test_the_transformer_is_the_default_decoder_and_satisfies_the_contract(device):
    model = make_model(device=device)
    assert ModelConfig().decoder == "transformer" and list(DECODERS) == ["transformer"]
    assert type(model.decoder) is TransformerDecoder and check_decoder(model.decoder, "transformer") is model.decoder
    assert model.decoder.embeddings is model.encoder.embeddings


def test_a_config_written_before_the_option_gets_the_transformer():
    """A checkpoint's ``model`` hyper-parameters from before ``model.decoder`` existed lack the key."""
    older = {key: value for key, value in asdict(tiny_config()).items() if key != "decoder"}
    assert ModelConfig(**older).decoder == "transformer"


@pytest.mark.usefixtures("recording")
def test_hiersum_takes_another_registered_decoder_with_the_same_weights(device):
    """Same weights under the same seed (a subclass adds no parameter): the same scores, through the new class."""
    src, mask, tgt = make_batch(device=device)
    reference = make_model(device=device)
    model = make_model(decoder="recording", device=device)
    assert type(model.decoder) is RecordingDecoder
    assert model.state_dict().keys() == reference.state_dict().keys()
    with torch.no_grad():
        torch.testing.assert_close(model(src, mask, tgt).logits, reference(src, mask, tgt).logits)
        generate(model, src, mask, GenerationOptions(beam_size=1, min_length=0, max_length=3))
    assert model.decoder.calls[0] == 0 and model.decoder.calls[-1] >= 1


@pytest.mark.parametrize(("decoder", "message"), [
    (object(), r"model.decoder=bad built a object; expected an nn.Module"),
    (nn.Linear(2, 2), r"built a Linear without init_state, static_forward, layers, embeddings; expected"),
    (NoStaticForward(), r"built a NoStaticForward without static_forward; expected"),
])
def test_what_does_not_satisfy_the_contract_is_refused_in_one_line(decoder, message):
    with pytest.raises(ValueError, match=message) as error:
        check_decoder(decoder, "bad")
    assert "\n" not in str(error.value)


def test_the_real_decoders_have_the_copy_part(device):
    model = make_model(copy_attention=True, coverage=True, device=device)
    assert check_decoder(model.decoder, "transformer", copy_width=model.config.d_model) is model.decoder


@pytest.mark.parametrize(("cls", "message"), [
    (WithoutCopyPart, r"^model.decoder=bad built a WithoutCopyPart without d_model; model.copy_attention=true reads "
                      r"the copy part of the decoder contract: 'd_model' = model.d_model=32 .*\(hiersum.model."
                      r"decoder_contract.CopySource\)$"),
    (WideEmbeddings, r"^model.decoder=bad built a WideEmbeddings with d_model 32 and embeddings 64 wide; "
                     r"model.copy_attention=true reads .* 'embeddings' 32 wide"),
])
def test_a_decoder_without_the_copy_part_is_refused_only_when_the_model_copies(cls, message):
    config = tiny_config()
    decoder = cls(config, embeddings=nn.Embedding(VOCAB, config.d_model, padding_idx=PAD))
    assert check_decoder(decoder, "bad") is decoder  # the contract without copying
    with pytest.raises(ValueError, match=message) as error:
        check_decoder(decoder, "bad", copy_width=config.d_model)
    assert "\n" not in str(error.value)


def test_the_registry_checks_the_copy_part_of_a_copying_model():
    register_decoder("no_copy_part", DecoderSpec(WithoutCopyPart))
    try:
        make_model(decoder="no_copy_part")  # no copy attention: built
        with pytest.raises(ValueError, match=r"^model.decoder=no_copy_part built a WithoutCopyPart without d_model"):
            make_model(decoder="no_copy_part", copy_attention=True)
    finally:
        unregister_decoder("no_copy_part")


def test_an_unknown_decoder_is_one_line_naming_the_registered_ones():
    config = tiny_config(decoder="lstm")
    with pytest.raises(UsageError, match=r"model.decoder: unknown decoder 'lstm'; registered decoders: transformer"):
        build_decoder(config, embeddings=nn.Embedding(VOCAB, config.d_model, padding_idx=PAD))
    with pytest.raises(UsageError, match="unknown decoder 'lstm'"):
        HierSum(config, vocab_size=VOCAB, pad_id=PAD, bos_id=BOS, eos_id=EOS)
