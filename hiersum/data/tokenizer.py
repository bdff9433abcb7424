"""Subword tokenizer: trained on the corpus with HF ``tokenizers`` or loaded from a local
path.

A trained tokenizer is a SentencePiece-style BPE model (NFKC, optional lowercase,
punctuation split off, Metaspace pre-tokenizer so that decoding restores the spaces)
with the special tokens ``<pad>``, ``<unk>``, ``<s>`` (BOS), ``</s>`` (EOS) and ``<p>`` (the
paragraph separator of the flat baseline). It is
saved as an HF tokenizer directory (``tokenizer.json`` + ``tokenizer_config.json``) so
that ``transformers.AutoTokenizer`` can load it too, and its JSON is stored inside every
checkpoint so that a checkpoint is self-contained.

The official SentencePiece model of the ranked WikiSum data (``spm9998_3.model``) loads as an
equivalent HF Unigram tokenizer (:func:`sentencepiece_tokenizer`, needs ``protobuf``) whose special
tokens are ``<PAD>`` (6), ``<S>`` (4, BOS), ``</S>`` (5, EOS), ``<P>`` (7) and ``<Q>`` (8).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

PAD, UNK, BOS, EOS, PARAGRAPH = "<pad>", "<unk>", "<s>", "</s>", "<p>"
SPECIAL_TOKENS = (PAD, UNK, BOS, EOS, PARAGRAPH)
"""The special tokens of a tokenizer trained by :func:`train_tokenizer`, its first ids."""
BYTE_PIECES = tuple(f"<0x{byte:02X}>" for byte in range(256))
"""The byte pieces of a tokenizer trained with byte fallback (SentencePiece's names), its last ids."""
OFFICIAL_TOKENS = ("<PAD>", "<S>", "</S>")
"""pad, bos and eos of the official SentencePiece vocabulary (ids 6, 4, 5)."""
OFFICIAL_PARAGRAPH = "<P>"
"""End-of-paragraph token of the official vocabulary (id 7): the flat baseline's separator."""
BERT_TOKENS = ("[PAD]", "[CLS]", "[SEP]")
"""pad, bos and eos of a BERT-family WordPiece vocabulary: [PAD] -> PAD, [CLS] -> BOS, [SEP] -> EOS."""


@dataclass(frozen=True)
class SpecialIds:
    pad: int
    bos: int
    eos: int


@dataclass(frozen=True)
class SpelledIds:
    """A text's token ids and, at each position of the vocabulary's unknown token, the text it stands for."""

    ids: list[int]
    unknown: dict[int, str]
    """Position in ``ids`` -> the characters of the text its unknown token covers (e.g. ``"ë"`` of ``"Zoë"``)."""


class SubwordTokenizer:
    """A thin wrapper over a ``tokenizers.Tokenizer`` that knows its special ids.

    The backend's own padding and truncation are turned off (hiersum pads and cuts itself): a loaded tokenizer may
    carry them (sentence-transformers' ``tokenizer.json`` pads every text to 128 tokens)."""

    def __init__(self, backend: Tokenizer, *, pad_token: str = PAD, bos_token: str = BOS, eos_token: str = EOS):
        backend.no_padding()
        backend.no_truncation()
        self.backend = backend
        ids = {name: backend.token_to_id(token) for name, token in
               (("pad", pad_token), ("bos", bos_token), ("eos", eos_token))}
        missing = [f"{name} token {token!r}" for (name, i), token in
                   zip(ids.items(), (pad_token, bos_token, eos_token), strict=True) if i is None]
        if missing:
            raise ValueError(f"tokenizer lacks the special tokens: {', '.join(missing)}")
        self.special = SpecialIds(**ids)
        self.tokens = (pad_token, bos_token, eos_token)

    @classmethod
    def detect(
        cls, backend: Tokenizer, *, pad: str | None = None, bos: str | None = None, eos: str | None = None
    ) -> SubwordTokenizer:
        """Wrap ``backend`` with the given special tokens; a token not given is ours (``<pad>``, ``<s>``,
        ``</s>``) when the vocabulary has them, else BERT's (``[PAD]``, ``[CLS]``, ``[SEP]``) when it has those,
        else the official one (``<PAD>``, ``<S>``, ``</S>``)."""
        def has(tokens: tuple[str, ...]) -> bool:
            return all(backend.token_to_id(t) is not None for t in tokens)

        default = (PAD, BOS, EOS) if has((PAD, BOS, EOS)) else BERT_TOKENS if has(BERT_TOKENS) else OFFICIAL_TOKENS
        return cls(backend, pad_token=pad or default[0], bos_token=bos or default[1], eos_token=eos or default[2])

    @property
    def paragraph_separator_id(self) -> int:
        """Id joining paragraphs in the flat baseline: ``<p>``, else the official ``<P>``, else EOS."""
        for token in (PARAGRAPH, OFFICIAL_PARAGRAPH):
            token_id = self.backend.token_to_id(token)
            if token_id is not None:
                return token_id
        return self.special.eos

    @property
    def unknown_id(self) -> int | None:
        """Id of the vocabulary's unknown token (``<unk>``, else BERT's ``[UNK]``); None when it has neither."""
        return next((token_id for token in (UNK, "[UNK]") if (token_id := self.backend.token_to_id(token)) is not None),
                    None)

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """Token ids of each text, without special tokens."""
        if not texts:
            return []
        return [encoding.ids for encoding in self.backend.encode_batch(texts, add_special_tokens=False)]

    def token_offsets(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        """The (start, end) characters of each token of each text (without special tokens), as
        :meth:`encode_batch` tokenizes it: where the text may be cut between tokens."""
        if not texts:
            return []
        return [encoding.offsets for encoding in self.backend.encode_batch(texts, add_special_tokens=False)]

    def encode_batch_spelled(self, texts: list[str]) -> list[SpelledIds]:
        """Token ids of each text (as :meth:`encode_batch`) with the text each unknown token stands for: the
        characters its offsets span in the text given (``model.copy_oov``: :mod:`hiersum.data.oov_words`)."""
        if not texts:
            return []
        unknown = self.unknown_id
        spelled = []
        for text, encoding in zip(texts, self.backend.encode_batch(texts, add_special_tokens=False), strict=True):
            ids = encoding.ids
            if unknown not in ids:  # the common case: the offsets are not read (encode_batch's time)
                spelled.append(SpelledIds(ids, {}))
                continue
            offsets = encoding.offsets
            spelled.append(SpelledIds(ids, {position: text[slice(*offsets[position])]
                                            for position, token_id in enumerate(ids) if token_id == unknown}))
        return spelled

    def decode(self, ids: Iterable[int], oov_words: Sequence[str] = ()) -> str:
        """Text of ids, stopping at EOS and skipping special tokens; an extended id V + k (``model.copy_oov``) is
        ``oov_words[k]``, joined to its neighbours as the tokenizer's decoder joins a token (an unknown word's text
        carries no word-boundary marker of its own, as the ``<unk>`` it replaces did not)."""
        kept = []
        for token_id in ids:
            if token_id == self.special.eos:
                break
            kept.append(int(token_id))
        V = self.vocab_size
        if all(token_id < V for token_id in kept):
            return self.backend.decode(kept, skip_special_tokens=True).strip()
        special = {token_id for token_id, token in self.backend.get_added_tokens_decoder().items() if token.special}
        tokens = [oov_words[token_id - V] if token_id >= V else self.backend.id_to_token(token_id)
                  for token_id in kept if token_id not in special]
        decoder = self.backend.decoder
        return (decoder.decode(tokens) if decoder is not None else " ".join(tokens)).strip()

    def to_str(self) -> str:
        return self.backend.to_str()

    @classmethod
    def from_str(cls, text: str, tokens: tuple[str, str, str] | None = None) -> SubwordTokenizer:
        """From ``to_str`` output; ``tokens`` = (pad, bos, eos), or None to :meth:`detect` them."""
        pad, bos, eos = tokens or (None, None, None)
        return cls.detect(Tokenizer.from_str(text), pad=pad, bos=bos, eos=eos)

    def save(self, directory: str | Path) -> Path:
        """Write an HF tokenizer directory (loadable by ``load_tokenizer`` and ``AutoTokenizer``)."""
        from transformers import PreTrainedTokenizerFast

        pad, bos, eos = self.tokens
        # the vocabulary's own unknown token: naming one it lacks would add it (a BERT vocabulary has [UNK])
        unk = None if self.unknown_id is None else self.backend.id_to_token(self.unknown_id)
        fast = PreTrainedTokenizerFast(tokenizer_object=self.backend, pad_token=pad, bos_token=bos,
                                       eos_token=eos, unk_token=unk)
        fast.save_pretrained(str(directory))
        return Path(directory)


def train_tokenizer(texts: Iterable[str], *, vocab_size: int, lowercase: bool = False,
                    byte_fallback: bool = False) -> SubwordTokenizer:
    """Train a SentencePiece-style BPE tokenizer of ``vocab_size`` pieces on ``texts``.

    ``byte_fallback``: the 256 :data:`BYTE_PIECES` end the vocabulary (``vocab_size`` counts them), so a character
    the training text lacks is encoded as its UTF-8 bytes instead of ``<unk>`` (SentencePiece's byte fallback, as
    Llama's tokenizer has it): every source word can be copied, and decoding joins the bytes back."""
    backend = Tokenizer(models.BPE(unk_token=UNK))
    steps = [normalizers.NFKC()] + ([normalizers.Lowercase()] if lowercase else [])
    backend.normalizer = normalizers.Sequence(steps)
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Punctuation(), pre_tokenizers.Metaspace(prepend_scheme="first")]
    )
    backend.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - (len(BYTE_PIECES) if byte_fallback else 0), special_tokens=list(SPECIAL_TOKENS),
        show_progress=False,
    )
    backend.train_from_iterator(texts, trainer=trainer)
    if byte_fallback:
        _add_byte_pieces(backend)
    return SubwordTokenizer(backend)


def _add_byte_pieces(backend: Tokenizer) -> None:
    """Rebuild the trained BPE model of ``backend`` with :data:`BYTE_PIECES` after its vocabulary and byte fallback
    on (pieces of the model, not added tokens: never matched in text, kept by decoding), and decode them back."""
    trained = json.loads(backend.to_str())["model"]
    vocab = dict(trained["vocab"])
    vocab.update({piece: len(trained["vocab"]) + byte for byte, piece in enumerate(BYTE_PIECES)})
    merges = [tuple(merge.split(" ")) if isinstance(merge, str) else tuple(merge) for merge in trained["merges"]]
    backend.model = models.BPE(vocab=vocab, merges=merges, unk_token=UNK, byte_fallback=True)
    backend.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace()])


def sentencepiece_tokenizer(path: str | Path) -> Tokenizer:
    """An HF Unigram tokenizer equivalent to a SentencePiece Unigram ``.model`` file (read with
    ``protobuf`` through transformers' copy of the SentencePiece schema; no ``sentencepiece`` needed).

    Same pieces, ids and scores; the model's precompiled normalizer (e.g. nmt_nfkc), whitespace
    collapsing and the ``▁`` prefix; unknown, control and user-defined pieces become special tokens
    (matched whole in text, dropped when decoding). The ids equal sentencepiece's own on real text
    (tested on Multi-News); one known difference: a user-defined symbol typed in the text after a
    space (``"a <Q> b"``) loses that space, where sentencepiece emits a lone ``▁`` before it.
    """
    from transformers.convert_slow_tokenizer import import_protobuf

    proto = import_protobuf().ModelProto()
    proto.ParseFromString(Path(path).read_bytes())
    if proto.trainer_spec.model_type != 1:
        raise ValueError(f"{path}: only SentencePiece Unigram models are supported, found model_type "
                         f"{proto.trainer_spec.model_type}")
    vocab = [(piece.piece, piece.score) for piece in proto.pieces]
    backend = Tokenizer(models.Unigram(vocab, unk_id=proto.trainer_spec.unk_id,
                                       byte_fallback=proto.trainer_spec.byte_fallback))
    steps: list[normalizers.Normalizer] = []
    if proto.normalizer_spec.precompiled_charsmap:
        steps.append(normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap))
    if proto.normalizer_spec.remove_extra_whitespaces:
        steps += [normalizers.Strip(), normalizers.Replace(Regex(" {2,}"), " ")]
    backend.normalizer = normalizers.Sequence(steps)
    scheme = "always" if proto.normalizer_spec.add_dummy_prefix else "never"
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme=scheme)
    backend.decoder = decoders.Metaspace(replacement="▁", prepend_scheme=scheme)
    special = [piece.piece for piece in proto.pieces if piece.type in (2, 3, 4)]  # unknown, control, user-defined
    backend.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in special])
    return backend


def load_tokenizer(
    path: str | Path, *, pad: str | None = None, bos: str | None = None, eos: str | None = None
) -> SubwordTokenizer:
    """Load a local ``tokenizer.json`` file, an HF tokenizer directory or a SentencePiece ``.model``.

    The special tokens are read from the directory's config (pad, bos and eos must be
    defined; ``cls``/``sep`` stand in for bos/eos in BERT-style tokenizers: [CLS] -> BOS, [SEP] -> EOS,
    [PAD] -> PAD); a BERT directory with only ``vocab.txt`` is converted to a fast tokenizer; for a file they are
    ``pad``/``bos``/``eos`` when given, else detected (:meth:`SubwordTokenizer.detect`).
    """
    path = Path(path)
    if path.is_file() and path.suffix == ".model":
        return SubwordTokenizer.detect(sentencepiece_tokenizer(path), pad=pad, bos=bos, eos=eos)
    if path.is_file():
        return SubwordTokenizer.detect(Tokenizer.from_file(str(path)), pad=pad, bos=bos, eos=eos)
    if not any((path / name).is_file() for name in ("tokenizer.json", "vocab.txt")):
        raise FileNotFoundError(f"{path}: expected a tokenizer.json file or an HF tokenizer directory holding "
                                f"tokenizer.json (or a WordPiece vocab.txt)")
    from transformers import AutoTokenizer

    fast = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    bos = fast.bos_token or fast.cls_token
    eos = fast.eos_token or fast.sep_token
    if fast.pad_token is None or bos is None or eos is None:
        raise ValueError(f"{path}: the tokenizer must define pad, bos (or cls) and eos (or sep) tokens, "
                         f"found pad={fast.pad_token!r} bos={bos!r} eos={eos!r}")
    return SubwordTokenizer(fast.backend_tokenizer, pad_token=fast.pad_token, bos_token=bos, eos_token=eos)
