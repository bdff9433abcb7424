"""Subword tokenizer: trained on the corpus with HF ``tokenizers`` or loaded from a local
path.

A trained tokenizer is a SentencePiece-style BPE model (NFKC, optional lowercase,
punctuation split off, Metaspace pre-tokenizer so that decoding restores the spaces)
with the special tokens ``<pad>``, ``<unk>``, ``<s>`` (BOS) and ``</s>`` (EOS). It is
saved as an HF tokenizer directory (``tokenizer.json`` + ``tokenizer_config.json``) so
that ``transformers.AutoTokenizer`` can load it too, and its JSON is stored inside every
checkpoint so that a checkpoint is self-contained.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"


@dataclass(frozen=True)
class SpecialIds:
    pad: int
    bos: int
    eos: int


class SubwordTokenizer:
    """A thin wrapper over a ``tokenizers.Tokenizer`` that knows its special ids."""

    def __init__(self, backend: Tokenizer, *, pad_token: str = PAD, bos_token: str = BOS, eos_token: str = EOS):
        self.backend = backend
        ids = {name: backend.token_to_id(token) for name, token in
               (("pad", pad_token), ("bos", bos_token), ("eos", eos_token))}
        missing = [f"{name} token {token!r}" for (name, i), token in
                   zip(ids.items(), (pad_token, bos_token, eos_token), strict=True) if i is None]
        if missing:
            raise ValueError(f"tokenizer lacks the special tokens: {', '.join(missing)}")
        self.special = SpecialIds(**ids)
        self.tokens = (pad_token, bos_token, eos_token)

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """Token ids of each text, without special tokens."""
        if not texts:
            return []
        return [encoding.ids for encoding in self.backend.encode_batch(texts, add_special_tokens=False)]

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ids, stopping at EOS and skipping special tokens."""
        kept = []
        for token_id in ids:
            if token_id == self.special.eos:
                break
            kept.append(int(token_id))
        return self.backend.decode(kept, skip_special_tokens=True).strip()

    def to_str(self) -> str:
        return self.backend.to_str()

    @classmethod
    def from_str(cls, text: str, tokens: tuple[str, str, str] = (PAD, BOS, EOS)) -> SubwordTokenizer:
        pad, bos, eos = tokens
        return cls(Tokenizer.from_str(text), pad_token=pad, bos_token=bos, eos_token=eos)

    def save(self, directory: str | Path) -> Path:
        """Write an HF tokenizer directory (loadable by ``load_tokenizer`` and ``AutoTokenizer``)."""
        from transformers import PreTrainedTokenizerFast

        pad, bos, eos = self.tokens
        fast = PreTrainedTokenizerFast(tokenizer_object=self.backend, pad_token=pad, bos_token=bos,
                                       eos_token=eos, unk_token=UNK)
        fast.save_pretrained(str(directory))
        return Path(directory)


def train_tokenizer(texts: Iterable[str], *, vocab_size: int, lowercase: bool = False) -> SubwordTokenizer:
    """Train a SentencePiece-style BPE tokenizer on ``texts``."""
    backend = Tokenizer(models.BPE(unk_token=UNK))
    steps = [normalizers.NFKC()] + ([normalizers.Lowercase()] if lowercase else [])
    backend.normalizer = normalizers.Sequence(steps)
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Punctuation(), pre_tokenizers.Metaspace(prepend_scheme="first")]
    )
    backend.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=[PAD, UNK, BOS, EOS], show_progress=False
    )
    backend.train_from_iterator(texts, trainer=trainer)
    return SubwordTokenizer(backend)


def load_tokenizer(path: str | Path) -> SubwordTokenizer:
    """Load a local ``tokenizer.json`` file or an HF tokenizer directory.

    The special tokens are read from the directory's config (pad, bos and eos must be
    defined; ``cls``/``sep`` stand in for bos/eos in BERT-style tokenizers).
    """
    path = Path(path)
    if path.is_file():
        return SubwordTokenizer(Tokenizer.from_file(str(path)))
    if not (path / "tokenizer.json").is_file():
        raise FileNotFoundError(f"{path}: expected a tokenizer.json file or an HF tokenizer directory holding one")
    from transformers import AutoTokenizer

    fast = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    bos = fast.bos_token or fast.cls_token
    eos = fast.eos_token or fast.sep_token
    if fast.pad_token is None or bos is None or eos is None:
        raise ValueError(f"{path}: the tokenizer must define pad, bos (or cls) and eos (or sep) tokens, "
                         f"found pad={fast.pad_token!r} bos={bos!r} eos={eos!r}")
    return SubwordTokenizer(fast.backend_tokenizer, pad_token=fast.pad_token, bos_token=bos, eos_token=eos)
