"""Kept for compatibility: the encoder registry lives in :mod:`hiersum.model.encoder_registry`."""

from hiersum.model.encoder_registry import (
    ENCODERS,
    EncoderSpec,
    batch_layout,
    build_encoder,
    encoder_spec,
    encoder_tokenizer_path,
    register_encoder,
    resolve_model_config,
    run_tokenizer_config,
    source_layout,
    unregister_encoder,
    validate_choices,
    validate_encoder,
)

__all__ = ["ENCODERS", "EncoderSpec", "batch_layout", "build_encoder", "encoder_spec", "encoder_tokenizer_path",
           "register_encoder", "resolve_model_config", "run_tokenizer_config", "source_layout", "unregister_encoder",
           "validate_choices", "validate_encoder"]
