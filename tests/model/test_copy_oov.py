"""Copying words outside the vocabulary (``model.copy_oov``): extended ids V + k embed as ``<unk>``, the mixture
covers them, the loss labels them, and a tiny model trained with some copied words hidden as extended ids copies
names it has never seen, where the model without the option copies none."""

from __future__ import annotations

import pytest
import torch

from hiersum.checkpoints.io import network_from_hparams
from hiersum.config import ModelConfig, OptimConfig, config_dict
from hiersum.data.extended_vocabulary import hidden_word_table, through_table
from hiersum.decoding.generation import GenerationOptions, generate
from hiersum.model import HierSum
from hiersum.model.encoder_registry import validate_encoder
from hiersum.model.extended_embedding import ExtendedEmbedding
from tests.helpers.copy_task import (
    COPY_K,
    COPY_VOCAB,
    SEEN,
    UNK,
    beam_copies,
    copy_targets,
    copy_task_batch,
    hide_copied_words,
    train_on_copy_task,
)
from tests.helpers.model import BOS, EOS, PAD, make_model, tiny_config

NAME = 3
"""Tokens of the unseen "name" put into each test source."""


def sources_with_a_name(name_ids: list[int], n: int = 64) -> torch.Tensor:
    """n sources [n, P, T] of seen ids, each holding ``name_ids`` at a random place among its first K tokens."""
    generator = torch.Generator().manual_seed(7)
    src, *_ = copy_task_batch(generator, n)
    flat = src.view(n, -1)
    for row, start in enumerate(torch.randint(0, COPY_K - len(name_ids) + 1, (n,), generator=generator).tolist()):
        flat[row, start:start + len(name_ids)] = torch.tensor(name_ids)
    return src


@pytest.mark.slow  # trains two tiny models (~10 s on 2 cores)
def test_a_name_outside_the_vocabulary_is_copied_only_with_copy_oov():
    """Measured (120 steps, 64 sources with a 3-token name among the first 8 tokens): with ``copy_oov`` and 30% of
    the copied ids hidden in training, the name as extended ids V, V+1, V+2 is copied in 64/64; without the option
    the name as ids never trained (80-82, what byte fallback gives an unseen character) in 0/64."""
    plain = train_on_copy_task(copy_attention=True)
    unseen = sources_with_a_name(list(range(SEEN.stop, SEEN.stop + NAME)))
    oov = train_on_copy_task(copy_attention=True, copy_oov=True, transform=hide_copied_words)
    extended = sources_with_a_name(list(range(COPY_VOCAB, COPY_VOCAB + NAME)))
    copied_plain, copied_oov = beam_copies(plain, unseen), beam_copies(oov, extended)
    print(f"copied: plain {copied_plain}/64 (unseen ids), copy_oov {copied_oov}/64 (extended ids)")
    assert copied_oov >= 60 and copied_plain <= 4, (copied_oov, copied_plain)


def copy_oov_model(seed: int = 0, device: torch.device | str = "cpu", **changes) -> HierSum:
    """A tiny copy-task model with ``copy_oov`` (untrained, eval mode) on ``device``."""
    torch.manual_seed(seed)
    config = tiny_config(copy_attention=True, copy_oov=True, **changes)
    return HierSum(config, vocab_size=COPY_VOCAB, pad_id=PAD, bos_id=BOS, eos_id=EOS, unk_id=UNK).eval().to(device)


def test_extended_ids_embed_as_unk_everywhere_and_the_table_is_an_embeddings(device):
    model = copy_oov_model(device=device)
    table = model.decoder.embeddings
    assert isinstance(table, ExtendedEmbedding) and table is model.encoder.embeddings
    assert table.weight is model.generator.weight
    ids = torch.tensor([[UNK, COPY_VOCAB, COPY_VOCAB + 5, 9]], device=device)
    embedded = table(ids)  # (1, 4, D)
    for position in (1, 2):
        assert torch.equal(embedded[0, position], embedded[0, 0])
    assert not torch.equal(embedded[0, 3], embedded[0, 0])  # the guard: a vocabulary id keeps its row
    plain = make_model(copy_attention=True)
    assert type(plain.decoder.embeddings) is torch.nn.Embedding
    assert set(copy_oov_model().state_dict()) == set(plain_copy_state_keys())


def plain_copy_state_keys():
    """The state-dict keys of the copy-task model without ``copy_oov``: the option adds no parameter."""
    torch.manual_seed(0)
    return HierSum(tiny_config(copy_attention=True), vocab_size=COPY_VOCAB, pad_id=PAD, bos_id=BOS, eos_id=EOS,
                   unk_id=UNK).state_dict()


def test_the_mixture_covers_the_extended_ids_and_the_loss_reads_their_copy_mass_alone(device):
    """With extended ids V + k in the source the distribution has V + K entries, sums to 1, gives an extended id
    exactly its copy attention (nothing generated), and the loss's label probability equals the mixture's."""
    model = copy_oov_model(device=device)
    src, mask, tgt_in, labels = copy_task_batch(torch.Generator().manual_seed(3), 4)
    src.view(4, -1)[:, 1] = COPY_VOCAB + 2  # K = 3 for the batch (extended ids V .. V + 2)
    src.view(4, -1)[0, 2] = COPY_VOCAB
    src.view(4, -1)[1, 5] = UNK  # a plain <unk> in the source: never a copy target
    tgt_in, labels = copy_targets(src)[1:]
    src, mask, tgt_in, labels = (tensor.to(device) for tensor in (src, mask, tgt_in, labels))
    with torch.no_grad():
        out = model(src, mask, tgt_in)
    log_probs = out.log_probs  # (B, S, V + K)
    assert log_probs.shape == (*labels.shape, COPY_VOCAB + 3)
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(labels.shape, device=device))
    memory_ids, attention = out.encoded.memory_ids, out.copy.attention  # (B, M), (B, S, M)
    copy_mass = (1 - out.copy.generate_probability) * (attention * memory_ids.eq(COPY_VOCAB + 2).unsqueeze(1)).sum(-1)
    torch.testing.assert_close(log_probs[..., COPY_VOCAB + 2].exp(), copy_mass)
    assert torch.all(attention.masked_select(memory_ids.eq(UNK).unsqueeze(1)) == 0)
    assert labels.ge(COPY_VOCAB).any()  # the guard: extended labels
    expected = log_probs.gather(-1, labels.unsqueeze(-1)).squeeze(-1)  # (B, S)
    in_vocabulary = labels.clamp(max=COPY_VOCAB - 1).unsqueeze(-1)  # an extended label's value is not read
    generated = out.logits.float().log_softmax(-1).gather(-1, in_vocabulary).squeeze(-1)  # (B, S)
    torch.testing.assert_close(out.copy.label_log_probs(labels, generated), expected)


@pytest.mark.parametrize("greedy", [False, True], ids=["beam", "greedy"])
def test_no_special_token_in_any_output_with_copy_oov(greedy, device):
    """A model whose output layer puts nearly all its mass on padding, BOS and <unk>, over sources holding <unk> and
    extended ids, writes none of the three: an out-of-vocabulary word comes out as its extended id."""
    model = copy_oov_model(seed=3, device=device)
    with torch.no_grad():
        for special in (PAD, BOS, UNK):
            model.generator.bias[special] += 50.0
    src, *_ = copy_task_batch(torch.Generator().manual_seed(5), 6)
    src.view(6, -1)[:, :4] = torch.tensor([UNK, COPY_VOCAB, UNK, COPY_VOCAB + 1])
    options = GenerationOptions(greedy=greedy, beam_size=3, max_length=10, min_length=4, n_best=1 if greedy else 3)
    src = src.to(device)
    decoded = generate(model, src, torch.ones_like(src, dtype=torch.bool), options)
    tokens = [token for hypotheses in decoded.n_best for h in hypotheses for token in h.tokens]
    assert tokens and not set(tokens) & {PAD, BOS, UNK}, tokens


def test_hidden_words_occur_in_both_source_and_target_and_share_one_extended_id_per_example():
    src = torch.tensor([[[9, 10, 11, PAD], [12, 9, 13, 14]], [[9, 20, 21, 22], [PAD, PAD, PAD, PAD]]])  # (2, 2, 4)
    src_mask = src.ne(PAD)
    tgt = torch.tensor([[9, 11, 30, EOS], [21, 9, EOS, PAD]])  # (2, 4)
    tgt_mask = tgt.ne(PAD)
    table = hidden_word_table(src, src_mask, tgt, tgt_mask, share=1.0, vocab_size=COPY_VOCAB, kept_ids=(PAD, EOS))
    hidden = {b: {v: int(table[b, v]) for v in range(COPY_VOCAB) if table[b, v] != v} for b in range(2)}
    assert hidden == {0: {9: COPY_VOCAB, 11: COPY_VOCAB + 1}, 1: {9: COPY_VOCAB, 21: COPY_VOCAB + 1}}
    assert through_table(table, src)[0, 1].tolist() == [12, COPY_VOCAB, 13, 14]
    assert through_table(table, tgt).tolist() == [[COPY_VOCAB, COPY_VOCAB + 1, 30, EOS],
                                                  [COPY_VOCAB + 1, COPY_VOCAB, EOS, PAD]]
    none = hidden_word_table(src, src_mask, tgt, tgt_mask, share=0.0, vocab_size=COPY_VOCAB, kept_ids=())
    assert torch.equal(through_table(none, src), src)


def test_copy_oov_needs_copy_attention_an_embedding_encoder_and_unk_and_checkpoints_record_unk():
    with pytest.raises(ValueError, match="model.copy_oov=true copies through the copy attention"):
        ModelConfig(copy_oov=True)
    with pytest.raises(ValueError, match=r"shared table \(hierarchical, flat\), found model.encoder=pretrained"):
        validate_encoder(ModelConfig(copy_attention=True, copy_oov=True, encoder="pretrained"))
    with pytest.raises(ValueError, match="needs the vocabulary's <unk> id"):
        HierSum(tiny_config(copy_attention=True, copy_oov=True), vocab_size=COPY_VOCAB, pad_id=PAD, bos_id=BOS,
                eos_id=EOS)
    with pytest.raises(ValueError, match="optim.copy_oov_share"):
        OptimConfig(copy_oov_share=1.5)
    hparams = {"model": config_dict(copy_oov_model().config), "vocab_size": COPY_VOCAB, "pad_id": PAD,
               "bos_id": BOS, "eos_id": EOS, "unk_id": UNK}
    rebuilt = network_from_hparams(hparams)
    assert rebuilt.unk_id == UNK and UNK in rebuilt.forbidden_ids and UNK in rebuilt.copy_attention.excluded_ids
    assert UNK not in make_model(copy_attention=True).forbidden_ids  # off: <unk> as before
