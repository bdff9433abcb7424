"""The copy task of the copy-attention tests: random sources of 2 paragraphs of 6 tokens over a vocabulary of 100;
the target is the source's first 8 tokens, then EOS. Training draws source ids from ``SEEN`` only, so the ids past it
are never trained (what a byte-fallback piece the training text lacks is)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

from hiersum.data.extended_vocabulary import hidden_word_table, through_table
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.decoding.generation import GenerationOptions, generate
from hiersum.model import HierSum
from hiersum.training.loss import teacher_forced_nll
from tests.helpers.model import BOS, EOS, PAD, tiny_config

COPY_VOCAB, COPY_P, COPY_T, COPY_K = 100, 2, 6, 8
SEEN = range(7, 80)
"""The ids training sources are drawn from (80-99 are never seen)."""
UNK = 1
"""The vocabulary's ``<unk>`` (``unk_id``) of the copy task."""

COPY_SPECIAL = {PAD: "<pad>", BOS: "<s>", EOS: "</s>", UNK: "<unk>", 0: "<p>"}
"""The special tokens of :func:`copy_task_tokenizer` by id."""

BatchTransform = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], tuple[torch.Tensor, ...]]
"""What a training run does to each batch (src, mask, tgt_in, labels) before the step (the OOV exposure)."""


def copy_task_batch(generator: torch.Generator, size: int, ids: range = SEEN) -> tuple[torch.Tensor, ...]:
    """src [size, P, T] of ``ids``, its mask, tgt_in [size, K + 1] (BOS first) and the labels [size, K + 1]."""
    src = torch.randint(ids.start, ids.stop, (size, COPY_P, COPY_T), generator=generator)
    return (src, *copy_targets(src))


def copy_targets(src: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The mask, tgt_in and labels of the copy task for sources ``src`` [size, P, T]."""
    size = src.size(0)
    first = src.view(size, -1)[:, :COPY_K]  # (size, K)
    tgt_in = torch.cat([torch.full((size, 1), BOS), first], 1)
    labels = torch.cat([first, torch.full((size, 1), EOS)], 1)
    return torch.ones_like(src, dtype=torch.bool), tgt_in, labels


def hide_copied_words(src: torch.Tensor, mask: torch.Tensor, tgt_in: torch.Tensor, labels: torch.Tensor,
                      share: float = 0.3, generator: torch.Generator | None = None) -> tuple[torch.Tensor, ...]:
    """The copy-task batch with a ``share`` of its copied ids hidden as extended ids (the training exposure of
    ``model.copy_oov``: a :data:`BatchTransform`)."""
    table = hidden_word_table(src, mask, labels, labels.ne(EOS), share=share, vocab_size=COPY_VOCAB,
                              kept_ids=(PAD, BOS, EOS, UNK), generator=generator)  # (B, V)
    return through_table(table, src), mask, through_table(table, tgt_in), through_table(table, labels)


def train_on_copy_task(
    *, steps: int = 120, ids: range = SEEN, transform: BatchTransform | None = None, **model_options
) -> HierSum:
    """A tiny model (``model_options``: its config's changes) trained ``steps`` Adam steps on fresh copy-task
    batches of 32 with source ids ``ids`` (each batch passed through ``transform`` first when given), in eval
    mode."""
    torch.manual_seed(0)
    model = HierSum(tiny_config(**model_options), vocab_size=COPY_VOCAB, pad_id=PAD, bos_id=BOS, eos_id=EOS,
                    unk_id=UNK)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        src, mask, tgt_in, labels = copy_task_batch(generator, 32, ids)
        if transform is not None:
            src, mask, tgt_in, labels = transform(src, mask, tgt_in, labels)
        optimizer.zero_grad()
        teacher_forced_nll(model(src, mask, tgt_in), labels, 0.0).backward()
        optimizer.step()
    return model.eval()


def beam_copies(model: HierSum, src: torch.Tensor) -> int:
    """How many of the sources ``src`` [n, P, T] beam search (3 beams) copies exactly: the first K tokens, then
    EOS."""
    mask, _, labels = copy_targets(src)
    decoded = generate(model, src, mask, GenerationOptions(beam_size=3, max_length=COPY_K + 1, min_length=0))
    return sum(sequence == expected for sequence, expected in zip(decoded.sequences, labels.tolist(), strict=True))


def copy_task_tokenizer() -> SubwordTokenizer:
    """The copy task's ids as words split on spaces: id N is ``wN`` but for :data:`COPY_SPECIAL`; any other word is
    ``<unk>`` (a word-level tokenizer: an ``<unk>`` stands for a whole word)."""
    vocab = {COPY_SPECIAL.get(i, f"w{i}"): i for i in range(COPY_VOCAB)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.add_special_tokens([AddedToken(token, special=True) for token in COPY_SPECIAL.values()])
    return SubwordTokenizer.detect(backend)
