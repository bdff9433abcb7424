"""The encoder contract (hiersum.model.encoder_contract): what the registry refuses, the optional PretrainedWeights
capability as HierSum uses it, and the one teacher-forced call."""

from __future__ import annotations

import inspect
import math

import pytest
import torch
from torch import Tensor, nn

from hiersum.config import ModelConfig
from hiersum.data.batching import SourceLayout
from hiersum.data.packing import PackedGrid
from hiersum.model import EncoderOutput, FlatEncoder, HierarchicalEncoder, PretrainedWeights
from hiersum.model.encoder_contract import check_encoder
from hiersum.model.encoder_registry import EncoderSpec, register_encoder, unregister_encoder
from hiersum.model.pretrained import PretrainedEncoder
from hiersum.model.summarizer import HierSum, TeacherForcedOutput
from tests.helpers.model import BOS, EOS, PAD, VOCAB, make_batch, make_model, tiny_config


class MeanEncoder(nn.Module):
    """The least an encoder needs: every token's scaled embedding is its state and its memory."""

    def __init__(self, config: ModelConfig, *, embeddings: nn.Embedding):
        super().__init__()
        self.embeddings = embeddings
        self.project = nn.Linear(config.d_model, config.d_model)
        self.layers = nn.ModuleList()
        self.layouts: list[PackedGrid | None] = []
        """The ``layout`` of every call (what HierSum passed)."""

    def forward(self, src: Tensor, src_mask: Tensor, *, paragraph_graph: Tensor | None = None,
                return_attention: bool = False, layout: PackedGrid | None = None) -> EncoderOutput:
        self.layouts.append(layout)
        states = self.project(self.embeddings(src) * math.sqrt(self.project.in_features))  # (B, P, T, D)
        B, P, T, D = states.shape
        return EncoderOutput(token_states=states, memory=states.view(B, P * T, D), memory_mask=src_mask.view(B, -1))


class PretrainedMeanEncoder(MeanEncoder):
    """:class:`MeanEncoder` whose projection is declared pretrained, and which sets the decoder's embeddings."""

    def pretrained_parameters(self) -> list[nn.Parameter]:
        return [self.project.weight]

    def initialise_decoder_embeddings(self, embeddings: nn.Embedding) -> None:
        with torch.no_grad():
            embeddings.weight.fill_(0.5)


class NoLayout(nn.Module):
    layers = nn.ModuleList()

    def forward(self, src: Tensor, src_mask: Tensor, *, paragraph_graph: Tensor | None = None,
                return_attention: bool = False) -> EncoderOutput:
        raise AssertionError("never called")


@pytest.fixture()
def registered():
    """``model.encoder=mean`` and ``model.encoder=pretrained_mean`` registered for the test."""
    register_encoder("mean", EncoderSpec(MeanEncoder, source_layout=SourceLayout.GRID))
    register_encoder("pretrained_mean", EncoderSpec(PretrainedMeanEncoder, source_layout=SourceLayout.GRID))
    yield
    unregister_encoder("mean")
    unregister_encoder("pretrained_mean")


def network(encoder: str, seed: int = 0) -> HierSum:
    torch.manual_seed(seed)
    config = tiny_config(encoder=encoder, inter_layers=[])
    return HierSum(config, vocab_size=VOCAB, pad_id=PAD, bos_id=BOS, eos_id=EOS)


def test_the_builtin_encoders_satisfy_the_contract_and_only_the_pretrained_one_brings_weights():
    hierarchical = make_model().encoder
    flat = make_model(encoder="flat", inter_layers=[]).encoder
    assert isinstance(hierarchical, HierarchicalEncoder) and isinstance(flat, FlatEncoder)
    for encoder in (hierarchical, flat):
        assert check_encoder(encoder, "x") is encoder
        assert not isinstance(encoder, PretrainedWeights)
    assert issubclass(PretrainedEncoder, PretrainedWeights)
    assert not issubclass(HierarchicalEncoder, PretrainedWeights)


def test_the_check_finds_layers_that_only_nn_modules_getattr_finds():
    """A ModuleList assigned in ``__init__`` lives in ``_modules``: a static lookup, as ``isinstance`` against a
    Protocol makes from Python 3.12, does not see it (every encoder was refused on 3.12); the check still does."""
    encoder = MeanEncoder(tiny_config(), embeddings=nn.Embedding(VOCAB, tiny_config().d_model))
    with pytest.raises(AttributeError):
        inspect.getattr_static(encoder, "layers")
    assert check_encoder(encoder, "mean") is encoder


@pytest.mark.parametrize(("encoder", "message"), [
    (object(), r"model.encoder=bad built a object; expected an nn.Module"),
    (nn.Linear(2, 2), r"built a Linear without 'layers' \(an empty nn.ModuleList\(\) if"),
    (NoLayout(), r"NoLayout.forward lacks the keyword argument\(s\) layout; expected"),
])
def test_what_does_not_satisfy_the_contract_is_refused_in_one_line(encoder, message):
    with pytest.raises(ValueError, match=message) as error:
        check_encoder(encoder, "bad")
    assert "\n" not in str(error.value)


@pytest.mark.usefixtures("registered")
def test_a_registered_encoder_is_checked_when_built():
    register_encoder("no_layout", EncoderSpec(lambda config, embeddings: NoLayout()))
    try:
        with pytest.raises(ValueError, match="model.encoder=no_layout: NoLayout.forward lacks"):
            network("no_layout")
    finally:
        unregister_encoder("no_layout")


@pytest.mark.usefixtures("registered")
def test_encode_hands_the_batch_layout_to_the_encoder(device):
    model = network("mean").to(device)
    src, mask, tgt = (tensor.to(device) for tensor in make_batch())
    layout = PackedGrid.from_mask(mask)
    model(src, mask, tgt, layout=layout)
    model.encode(src, mask)
    assert model.encoder.layouts == [layout, None]


@pytest.mark.usefixtures("registered")
def test_declared_pretrained_parameters_keep_their_weights_and_the_encoder_sets_the_decoder_embeddings():
    plain, pretrained = network("mean"), network("pretrained_mean")
    linear = nn.Linear(32, 32)  # the weights a fresh Linear draws first, as both encoders did under seed 0
    torch.manual_seed(0)
    nn.Embedding(VOCAB, 32, padding_idx=PAD)
    linear.reset_parameters()
    assert pretrained.pretrained_parameters() == [pretrained.encoder.project.weight]
    assert plain.pretrained_parameters() == []
    assert torch.equal(pretrained.encoder.project.weight, linear.weight)  # not re-initialised
    assert not torch.equal(plain.encoder.project.weight, linear.weight)  # Xavier-uniform
    assert (pretrained.decoder.embeddings.weight == 0.5).all()
    assert not (plain.decoder.embeddings.weight == 0.5).any()


def test_teacher_forcing_is_one_call(model, batch):
    src, mask, tgt = batch
    out = model(src, mask, tgt, return_attention=True)
    assert isinstance(out, TeacherForcedOutput) and out.logits.shape == (3, 7, VOCAB)
    assert len(out.encoded.pooling_weights) == 2 and model(src, mask, tgt).encoded.pooling_weights is None
    assert torch.equal(out.log_probs, torch.log_softmax(out.logits, dim=-1))
    assert not hasattr(model, "log_probs") and not hasattr(model, "logits")  # one teacher-forced call, no other
