"""A training module of the tiny model and a batch for it, shared by the training and checkpoint tests."""

from __future__ import annotations

import numpy as np
import torch

from hiersum.config import DataConfig, ModelConfig, OptimConfig
from hiersum.data.batching import collate
from hiersum.data.graph import similarity_graph
from hiersum.data.schema import Batch, EncodedExample
from hiersum.data.tokenizer import train_tokenizer
from hiersum.model.encoder_registry import batch_layout
from hiersum.training.module import HierSumModule, module_hparams
from tests.helpers.config import tiny_model_config

TEXTS = ["alpha beta", "gamma delta epsilon", "zeta alpha"]


def module_and_batch(model: ModelConfig | None = None, optim: OptimConfig | None = None, *,
                     device: torch.device | str = "cpu") -> tuple[HierSumModule, Batch, dict]:
    """A module of the tiny model, a 2-example batch (with a graph or flat when the model asks), both on
    ``device``, and the dict that ``module.log`` fills."""
    model = model or tiny_model_config()
    tokenizer = train_tokenizer(["alpha beta gamma delta.", "beta gamma epsilon zeta."] * 10, vocab_size=60)
    torch.manual_seed(0)
    module = HierSumModule(**module_hparams(model, optim or OptimConfig(label_smoothing=0.0), DataConfig(path="x"),
                                            tokenizer))
    ids = tokenizer.encode_batch(TEXTS)
    graph = similarity_graph(TEXTS[:2]) if model.graph != "none" else None
    examples = [
        EncodedExample(id="a", paragraphs=ids[:2], target=ids[2], references=["z"], provenance=[], graph=graph),
        EncodedExample(id="b", paragraphs=[ids[2]], target=ids[0] + ids[2], references=["x"], provenance=[],
                       graph=np.zeros((1, 1), dtype=np.float32) if graph is not None else None),
    ]
    special = tokenizer.special
    batch = collate(examples, pad_id=special.pad, bos_id=special.bos, eos_id=special.eos,
                    flat=batch_layout(model, tokenizer))
    logged: dict = {}
    module.log = lambda name, value, **kwargs: logged.__setitem__(name, value)
    return module.to(device), batch.to(device), logged
