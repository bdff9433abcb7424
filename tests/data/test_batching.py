"""Collating batches (grid and flat layouts), token-budget batching and sharding, paragraph selection."""

import numpy as np
import pytest
import torch
from pytorch_lightning.plugins.precision import HalfPrecision

from hiersum.config import ModelConfig
from hiersum.data.batching import (
    FlatLayout,
    ResumableDataLoader,
    SourceLayout,
    TokenBudgetBatchSampler,
    collate,
    flat_layout,
    flatten_paragraphs,
    make_token_budget_batches,
)
from hiersum.data.schema import EncodedExample
from hiersum.data.selection import EncodingConfig, encode_examples, order_paragraphs
from hiersum.data.tokenizer import train_tokenizer


def example(i: int, paragraphs: list[list[int]], target: list[int]) -> EncodedExample:
    return EncodedExample(id=str(i), paragraphs=paragraphs, target=target, references=["r"], provenance=[])


def test_collate_pads_and_masks():
    batch = collate(
        [example(0, [[7, 8, 9], [10]], [11, 12]), example(1, [[13]], [14])], pad_id=0, bos_id=1, eos_id=2
    )
    assert batch.src.shape == (2, 2, 3) and batch.src_mask.dtype == torch.bool
    assert batch.src[0].tolist() == [[7, 8, 9], [10, 0, 0]]
    assert batch.src_mask[1].tolist() == [[True, False, False], [False, False, False]]
    assert batch.tgt_in.tolist() == [[1, 11, 12], [1, 14, 0]]
    assert batch.tgt_out.tolist() == [[11, 12, 2], [14, 2, 0]]
    assert batch.tgt_mask.tolist() == [[True, True, True], [True, True, False]]


def test_a_batch_converts_as_lightnings_bf16_true_plugin_converts_it():
    graph = np.array([[1.0, 0.5], [0.5, 1.0]], dtype=np.float32)
    examples = [EncodedExample(id="0", paragraphs=[[7, 8, 9], [10]], target=[11], references=["r"],
                               provenance=[(0, 0), (0, 1)], graph=graph), example(1, [[13]], [14])]
    examples[1] = EncodedExample(**{**vars(examples[1]), "graph": np.ones((1, 1), dtype=np.float32)})
    batch = collate(examples, pad_id=0, bos_id=1, eos_id=2)
    converted = HalfPrecision("bf16-true").convert_input(batch)  # trainer.precision=bf16-true, before the step
    assert converted.paragraph_graph.dtype == torch.bfloat16
    assert torch.equal(converted.paragraph_graph.float(), batch.paragraph_graph)
    for name in ("src", "src_mask", "tgt_in", "tgt_out", "tgt_mask"):
        assert torch.equal(getattr(converted, name), getattr(batch, name)), name  # ids and masks kept
    assert converted.sources == batch.sources and converted.layout.n_rows == batch.layout.n_rows == 5


def test_token_budget_batches_cover_every_example_once_and_respect_budget():
    examples = [example(i, [[5] * (1 + i % 7)] * (1 + i % 5), [6] * (i % 4)) for i in range(60)]
    batches = make_token_budget_batches(examples, batch_tokens=40, max_batch_size=8)
    assert sorted(i for b in batches for i in b) == list(range(60))
    for batch in batches:
        grid = collate([examples[i] for i in batch], pad_id=0, bos_id=1, eos_id=2).src
        assert len(batch) <= 8
        assert len(batch) == 1 or grid.numel() <= 40


def test_sampler_shards_evenly_across_ranks_and_shuffles_per_epoch():
    examples = [example(i, [[5] * (1 + i % 9)], [6]) for i in range(50)]
    shards = [
        list(TokenBudgetBatchSampler(examples, batch_tokens=20, max_batch_size=4, shuffle=True,
                                     num_replicas=3, rank=r))
        for r in range(3)
    ]
    assert len({len(s) for s in shards}) == 1
    covered = {i for shard in shards for batch in shard for i in batch}
    assert covered == set(range(50))
    sampler = TokenBudgetBatchSampler(examples, batch_tokens=20, max_batch_size=4, shuffle=True)
    epoch0 = list(sampler)
    sampler.set_epoch(1)
    assert list(sampler) != epoch0 and sorted(map(tuple, list(sampler))) == sorted(map(tuple, epoch0))


def test_a_sampler_restored_mid_epoch_yields_the_rest_of_that_epoch_then_the_next():
    examples = [example(i, [[5] * (1 + i % 9)], [6]) for i in range(50)]
    options = {"batch_tokens": 20, "max_batch_size": 4, "shuffle": True, "seed": 3}
    uninterrupted = TokenBudgetBatchSampler(examples, **options)
    uninterrupted.set_epoch(2)
    epoch2 = list(uninterrupted)
    uninterrupted.set_epoch(3)
    epoch3 = list(uninterrupted)

    killed = TokenBudgetBatchSampler(examples, **options)
    killed.set_epoch(2)
    fetched = iter(killed)
    for _ in range(5):  # a loader may fetch more than training uses ...
        next(fetched)
    for _ in range(4):
        killed.mark_consumed()  # ... the state counts the batches that reached the model
    state = killed.state_dict()

    resumed = TokenBudgetBatchSampler(examples, **options)
    resumed.load_state_dict(state)
    assert list(resumed) == epoch2[4:] and resumed.consumed == 4
    resumed.set_epoch(3)
    assert list(resumed) == epoch3  # the next epoch starts at its beginning


def test_lightning_sets_the_epoch_of_a_loaders_token_budget_sampler():
    # Lightning calls set_epoch on loader.sampler and loader.batch_sampler.sampler as every epoch starts;
    # without it every epoch would repeat the first epoch's order
    from lightning_fabric.utilities.data import _set_sampler_epoch

    examples = [example(i, [[5] * (1 + i % 9)], [6]) for i in range(50)]
    sampler = TokenBudgetBatchSampler(examples, batch_tokens=20, max_batch_size=4, shuffle=True, seed=3)
    loader = ResumableDataLoader(examples, batch_sampler=sampler, collate_fn=list)
    epoch0 = list(sampler)
    _set_sampler_epoch(loader, 1)
    assert sampler.epoch == 1 and list(sampler) != epoch0


def test_a_sampler_restored_at_the_end_of_an_epoch_starts_the_next_epoch():
    # the checkpoint of the validation at an epoch's end holds the whole epoch consumed; Lightning sets the
    # epoch of the resumed loop before or after the state is loaded: either way the next epoch's order
    examples = [example(i, [[5] * (1 + i % 9)], [6]) for i in range(50)]
    options = {"batch_tokens": 20, "max_batch_size": 4, "shuffle": True, "seed": 3}
    finished = TokenBudgetBatchSampler(examples, **options)
    finished.set_epoch(2)
    for _ in finished:
        finished.mark_consumed()
    state = finished.state_dict()
    finished.set_epoch(3)
    epoch3 = list(finished)

    loaded_first = TokenBudgetBatchSampler(examples, **options)
    loaded_first.load_state_dict(state)
    loaded_first.set_epoch(3)
    epoch_set_first = TokenBudgetBatchSampler(examples, **options)
    epoch_set_first.set_epoch(3)
    epoch_set_first.load_state_dict(state)
    assert list(loaded_first) == list(epoch_set_first) == epoch3


def test_a_sampler_state_of_other_batches_is_refused():
    examples = [example(i, [[5] * (1 + i % 9)], [6]) for i in range(50)]
    state = TokenBudgetBatchSampler(examples, batch_tokens=20, max_batch_size=4, shuffle=True).state_dict()
    other = TokenBudgetBatchSampler(examples[:30], batch_tokens=20, max_batch_size=4, shuffle=True)
    with pytest.raises(ValueError, match="resume with the same data"):
        other.load_state_dict(state)


def test_order_paragraphs_rules():
    documents = [["a0", "a1", "a2"], ["b0"], ["c0", "c1"]]
    assert order_paragraphs(documents, "first") == [(0, 0), (0, 1), (0, 2), (1, 0), (2, 0), (2, 1)]
    assert order_paragraphs(documents, "round_robin") == [(0, 0), (1, 0), (2, 0), (0, 1), (2, 1), (0, 2)]
    with pytest.raises(ValueError, match="round_robin"):
        order_paragraphs(documents, "tfidf")


class CharTokenizer:
    """Each character is a token (ids = code points): enough to test selection."""

    def encode_batch(self, texts):
        return [[ord(c) for c in text] for text in texts]


def test_encode_examples_keeps_title_first_caps_paragraphs_and_tokens():
    from hiersum.data.schema import Example

    source = Example(id="e", title="T", documents=[["aaaa", "bb"], ["cccccc"]], references=["xyz"])
    config = EncodingConfig(max_paragraphs=3, max_paragraph_tokens=3, max_target_tokens=2)
    (encoded,) = encode_examples([source], CharTokenizer(), config)
    assert encoded.paragraphs == [[84], [97] * 3, [98] * 2]
    assert encoded.provenance == [(-1, 0), (0, 0), (0, 1)]
    assert encoded.n_dropped_paragraphs == 1
    assert encoded.target == [120, 121]


def test_flat_layout_joins_paragraphs_cuts_and_appends_eos():
    layout = FlatLayout(max_tokens=6, separator_id=3)
    assert flatten_paragraphs([[7, 8], [9], [10, 11, 12]], layout, eos_id=2) == [7, 8, 3, 9, 3, 10, 2]
    assert flatten_paragraphs([], layout, eos_id=2) == [2]
    batch = collate([example(0, [[7, 8], [9]], [11]), example(1, [[10]], [11])], pad_id=0, bos_id=1, eos_id=2,
                    flat=layout)
    assert batch.src.tolist() == [[7, 8, 3, 9, 2], [10, 2, 0, 0, 0]]
    assert batch.src_mask.tolist() == [[True] * 5, [True, True, False, False, False]]
    assert batch.paragraph_graph is None


def test_flat_layout_of_a_model_uses_the_paragraph_token():
    tokenizer = train_tokenizer(["Rain fell on the harbour.", "The institute trains glass makers."] * 8,
                                vocab_size=80)
    assert flat_layout(SourceLayout.GRID, ModelConfig(), tokenizer) is None
    layout = flat_layout(SourceLayout.FLAT, ModelConfig(encoder="flat", inter_layers=[], flat_max_tokens=77), tokenizer)
    assert layout == FlatLayout(max_tokens=77, separator_id=tokenizer.backend.token_to_id("<p>"))
    assert layout.separator_id not in (tokenizer.special.pad, tokenizer.special.eos)
    assert tokenizer.decode([*tokenizer.encode_batch(["Rain"])[0], layout.separator_id]) == "Rain"
