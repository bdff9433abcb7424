"""Precision modelled once (:mod:`hiersum.inference.precision`): one table from each of Lightning's names to what
decoding does, the weights converted once when a summarizer is loaded and never by a decode, so that a model loaded
in ``bf16-true`` is refused a ``32`` decode instead of running it in bfloat16, and a ``32`` summarizer decodes in
float32 whatever was loaded before it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from hiersum.config import DecodeConfig, Precision, SelectionOverrides
from hiersum.data.schema import Example
from hiersum.data.selection import encode_examples
from hiersum.inference import PRECISIONS, load_summarizer, summarize_encoded
from hiersum.inference.precision import check_weights, decoding_precision
from tests.helpers.checkpoints import save_summarizer_checkpoint

DECODE = DecodeConfig(beam_size=2, min_length=1, max_length=6)
EXAMPLE = Example(id="a", title="", documents=[["alpha beta gamma.", "delta epsilon."], ["zeta alpha."]])


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_summarizer_checkpoint(tmp_path_factory.mktemp("precision") / "tiny.ckpt")


def decoded_dtypes(summarizer, precision: str | None = None) -> set[torch.dtype]:
    """The dtypes of the model's linear layers' results while ``summarizer`` decodes :data:`EXAMPLE` with
    ``summarize_encoded`` in ``precision`` (its own by default)."""
    seen: set[torch.dtype] = set()
    linears = [module for module in summarizer.model.modules() if isinstance(module, torch.nn.Linear)]
    hooks = [linear.register_forward_hook(lambda _m, _i, output: seen.add(output.dtype)) for linear in linears]
    encoded = encode_examples([EXAMPLE], summarizer.tokenizer, summarizer.selection(SelectionOverrides()))
    try:
        for _ in summarize_encoded(summarizer.model, encoded, summarizer.tokenizer, DECODE, batch_tokens=512,
                                   device=summarizer.device, precision=precision or summarizer.precision):
            pass
    finally:
        for hook in hooks:
            hook.remove()
    return seen


def test_the_table_holds_every_one_of_lightnings_precisions_once():
    assert set(PRECISIONS) == set(Precision)
    assert len(Precision.__members__) == 12 and len(Precision) == 8  # 4 aliases
    assert decoding_precision("bf16") is PRECISIONS[Precision("bf16-mixed")]
    assert decoding_precision(16) is PRECISIONS[Precision("16-mixed")]
    mixed = decoding_precision("bf16-mixed")
    assert (mixed.weights, mixed.autocast, mixed.computes) == (torch.float32, torch.bfloat16, torch.bfloat16)
    true = decoding_precision("bf16-true")
    assert (true.weights, true.autocast, true.computes) == (torch.bfloat16, None, torch.bfloat16)
    with pytest.raises(ValueError, match=r"^precision must be one of 'transformer-engine', .*'bf16', found '64bit'$"):
        decoding_precision("64bit")


def test_bf16_true_then_32_decodes_in_float32_or_is_refused(checkpoint, device):
    """The issue's sequence: a decode in ``bf16-true`` left the shared model in bfloat16, and a later ``32`` decode
    ran in bfloat16. Now the weights are the summarizer's, converted when loaded: a ``32`` decode of the bfloat16
    model is refused, naming both dtypes, and converts nothing; a summarizer loaded in ``32`` decodes in float32."""
    half = load_summarizer(checkpoint, device=str(device), precision="bf16-true")
    assert {parameter.dtype for parameter in half.model.parameters()} == {torch.bfloat16}
    assert decoded_dtypes(half) == {torch.bfloat16}
    with pytest.raises(ValueError, match=r"^precision=32 decodes weights in torch.float32; found the model's in "
                                         r"torch.bfloat16: load it in that precision"):
        decoded_dtypes(half, "32")
    assert {parameter.dtype for parameter in half.model.parameters()} == {torch.bfloat16}  # nothing converted
    full = load_summarizer(checkpoint, device=str(device), precision="32")
    assert decoded_dtypes(full) == {torch.float32}
    with pytest.raises(ValueError, match="precision=bf16-true decodes weights in torch.bfloat16; found the model's "
                                         "in torch.float32"):
        check_weights(full.model, "bf16-true")


def test_a_mixed_precision_autocasts_the_float32_weights(checkpoint, device):
    mixed = load_summarizer(checkpoint, device=str(device), precision="bf16")
    assert {parameter.dtype for parameter in mixed.model.parameters()} == {torch.float32}
    assert torch.bfloat16 in decoded_dtypes(mixed)
