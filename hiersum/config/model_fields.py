"""The three kinds of :class:`hiersum.config.ModelConfig` field, by what a trained network's weights say of them:
read where a network is rebuilt from what it records (fine-tuning's ``init_from``, a model directory of an earlier
version).

- :data:`SHAPE_FIELDS` describe the network the weights are for;
- :data:`PART_FIELDS` switch on a part with weights of its own;
- :data:`FREE_FIELDS` change how the network trains, not what it is.

``tests/training/test_init_from.py`` fails when a field of ModelConfig is in none of them, or in two.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hiersum.config.choices import Graph

SHAPE_FIELDS = frozenset({
    "d_model", "heads", "ff_size", "encoder_layers", "inter_layers", "inter_heads", "decoder_layers", "encoder",
    "decoder", "pretrained_encoder", "pretrained_config_json", "pretrained_wrap_ids", "tie_decoder_embeddings",
    "copy_decoder_embeddings",
})
"""The model settings that describe the network the weights are for: refused when they differ from the checkpoint's
(``pretrained_encoder``: the weights come from the checkpoint, not from a pretrained encoder's directory)."""
PART_FIELDS: Mapping[str, Any] = {"copy_attention": False, "coverage": False, "graph": Graph.none}
"""The model settings that add a part with weights of its own, each with its value without the part: switched on for
a network trained without it, the part starts fresh."""
FREE_FIELDS = frozenset({
    "dropout", "attention_dropout", "max_positions", "flat_max_tokens", "pooling_penalty", "coverage_loss_weight",
    "copy_oov", "pretrained_frozen_layers", "pretrained_frozen_embeddings", "pretrained_cache_states",
})
"""The model settings that change how the network trains, not what it is: the command line's value is taken
(``max_positions``: the sinusoid tables are computed, not trained; ``copy_oov``: no weights of its own, the extended
ids embed as ``<unk>``)."""
