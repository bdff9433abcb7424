"""Prepared corpora (hiersum.data.prepared): the same examples and batches as encoding in memory, a cache
keyed by the inputs, the selection and the tokenizer, atomic preparation, malformed records."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from hiersum.config import DataConfig, TokenizerConfig
from hiersum.data import corpus_tokenizer as corpus_tokenizer_module
from hiersum.data import prepared as prepared_module
from hiersum.data.batching import TokenBudgetBatchSampler, example_lengths, make_token_budget_batches
from hiersum.data.corpus_splits import CorpusSplits, read_split
from hiersum.data.corpus_tokenizer import corpus_tokenizer
from hiersum.data.prepared import PreparedSplit, prepare_split, split_manifest
from hiersum.data.schema import RecordError
from hiersum.data.selection import encode_examples, encoding_config
from hiersum.data.tokenizer import SubwordTokenizer, train_tokenizer
from hiersum.errors import UsageError
from tests.helpers.corpus import copy_corpus, write_with_bad_validation_line


@pytest.fixture(scope="module")
def tokenizer(tiny_corpus: Path) -> SubwordTokenizer:
    texts = [p for e in read_split(tiny_corpus / "train.jsonl") for d in e.documents for p in d]
    return train_tokenizer(texts, vocab_size=300)


def data_config(corpus: Path, cache: Path, **changes) -> DataConfig:
    return DataConfig(path=str(corpus), cache_dir=str(cache), max_paragraphs=5, max_paragraph_tokens=16,
                      max_target_tokens=20, batch_tokens=400, max_batch_size=6, **changes)


@pytest.mark.parametrize("split", ["train", "validation"])
def test_prepared_split_reads_back_the_in_memory_encoding_across_shards(split, tiny_corpus, tokenizer, tmp_path):
    data = data_config(tiny_corpus, tmp_path, eval_max_paragraphs=3)
    prepared = prepare_split(data, split, tokenizer, graph="similarity", shard_examples=3)  # several shards
    examples = read_split(tiny_corpus / f"{split}.jsonl")
    selection = encoding_config(data, graph="similarity", evaluation=split != "train")
    expected = encode_examples(examples, tokenizer, selection)

    assert len(prepared) == len(expected) and len(prepared.manifest["shards"]) == -(-len(expected) // 3)
    assert [prepared[i] for i in range(len(prepared))] == expected  # graphs and provenance included
    assert prepared[-1] == expected[-1] and prepared[2:5] == expected[2:5]
    assert prepared.lengths.tolist() == example_lengths(expected).tolist()
    if split == "validation":
        assert [prepared.example(i) for i in range(len(prepared))] == examples  # the text, for the baselines
    else:
        with pytest.raises(ValueError, match="token ids only"):
            prepared.example(0)
    with pytest.raises(IndexError):
        prepared[len(prepared)]


def test_token_budget_batches_from_the_length_index_equal_those_of_the_examples(tiny_corpus, tokenizer, tmp_path):
    data = replace(data_config(tiny_corpus, tmp_path), max_paragraphs=20, max_paragraph_tokens=200,
                   max_target_tokens=200)
    prepared = prepare_split(data, "train", tokenizer)
    encoded = list(prepared)
    assert len({tuple(row) for row in prepared.lengths.tolist()}) > 5  # sizes differ: the grouping is exercised
    for budget, size in ((400, 6), (150, 3), (5000, 64)):
        batches = make_token_budget_batches(prepared.lengths, batch_tokens=budget, max_batch_size=size)
        assert batches == make_token_budget_batches(encoded, batch_tokens=budget, max_batch_size=size)
        assert len(batches) > 1 or budget == 5000

    def sampler(source):
        return TokenBudgetBatchSampler(source, batch_tokens=150, max_batch_size=3, shuffle=True, seed=3,
                                       num_replicas=2, rank=1)

    assert list(sampler(prepared.lengths)) == list(sampler(encoded))


def test_a_prepared_split_is_reused_and_its_key_follows_inputs_selection_and_tokenizer(
    tiny_corpus, tokenizer, tmp_path, monkeypatch
):
    corpus = copy_corpus(tiny_corpus, tmp_path / "corpus")
    data = data_config(corpus, tmp_path / "cache")
    first = prepare_split(data, "validation", tokenizer)

    def refuse(*args, **kwargs):
        raise AssertionError("prepared again")

    with monkeypatch.context() as patch:
        patch.setattr(prepared_module, "_write_split", refuse)
        assert prepare_split(data, "validation", tokenizer).folder == first.folder  # found, not written
        assert CorpusSplits(data, tokenizer).load("validation").folder == first.folder

    other_selection = prepare_split(replace(data, max_paragraph_tokens=8), "validation", tokenizer)
    other_tokenizer = prepare_split(data, "validation", train_tokenizer(["some other text"] * 4, vocab_size=40))
    stat = (corpus / "validation.jsonl").stat()
    os.utime(corpus / "validation.jsonl", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    touched = prepare_split(data, "validation", tokenizer)
    folders = {first.folder, other_selection.folder, other_tokenizer.folder, touched.folder}
    assert len(folders) == 4 and all(folder.parent == tmp_path / "cache" for folder in folders)
    assert touched[0] == first[0] and other_selection[0] != first[0]
    # a batch size is not part of the key: the same folder serves any batching
    assert prepare_split(replace(data, batch_tokens=999), "validation", tokenizer).folder == touched.folder


def test_a_split_prepared_under_sentences_is_keyed_by_what_the_rule_does_with_a_long_sentence(
        tiny_corpus, tokenizer, tmp_path):
    given = split_manifest(data_config(tiny_corpus, tmp_path), "validation", tokenizer)
    assert "long_sentences" not in given  # the corpora prepared under given keep their folder
    sentences = split_manifest(data_config(tiny_corpus, tmp_path, paragraphs="sentences"), "validation", tokenizer)
    assert sentences["long_sentences"] == "split"  # those prepared when a long sentence was cut are not read again
    assert prepare_split(data_config(tiny_corpus, tmp_path, paragraphs="sentences"), "validation", tokenizer)[0]


@pytest.mark.slow  # spawned tokenizing processes
def test_a_killed_preparation_leaves_no_folder_that_looks_complete(tiny_corpus, tokenizer, tmp_path, monkeypatch):
    data = data_config(tiny_corpus, tmp_path)
    monkeypatch.setattr(prepared_module, "ENCODE_CHUNK", 7)  # 40 examples: 6 chunks
    original = prepared_module._ShardWriter.add
    calls = []

    def dies_on_the_third_chunk(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt  # as a kill would stop it: mid-split, files half written
        original(self, *args, **kwargs)

    monkeypatch.setattr(prepared_module._ShardWriter, "add", dies_on_the_third_chunk)
    with pytest.raises(KeyboardInterrupt):
        prepare_split(data, "train", tokenizer)
    assert not [path for path in tmp_path.iterdir() if path.is_dir()]  # neither the folder nor its temporary
    monkeypatch.setattr(prepared_module._ShardWriter, "add", original)
    assert len(prepare_split(data, "train", tokenizer)) == 40


def test_the_trained_tokenizer_is_cached_and_equals_a_fresh_training(tiny_corpus, tmp_path, monkeypatch):
    data = data_config(tiny_corpus, tmp_path)
    config = TokenizerConfig(vocab_size=300)
    tokenizer = corpus_tokenizer(config, data)
    fresh = train_tokenizer(
        (t for e in read_split(tiny_corpus / "train.jsonl") for t in
         [e.title, *e.references, *(p for d in e.documents for p in d)] if t), vocab_size=300)
    assert tokenizer.to_str() == SubwordTokenizer.from_str(fresh.to_str()).to_str()
    monkeypatch.setattr(corpus_tokenizer_module, "train_tokenizer", lambda *a, **k: pytest.fail("trained again"))
    assert corpus_tokenizer(config, data).to_str() == tokenizer.to_str()
    digest = prepared_module.tokenizer_digest
    assert digest(corpus_tokenizer(config, data)) == digest(tokenizer)


class IdTokenizer:
    """Stands in for the SentencePiece tokenizer of WikiSum ids (official BOS 4, EOS 5)."""

    class special:
        pad, bos, eos = 6, 4, 5

    tokens = ("<PAD>", "<S>", "</S>")

    def to_str(self) -> str:
        return "ids"

    def decode(self, ids) -> str:
        return " ".join(f"W{i}" for i in ids)


def test_a_malformed_record_fails_in_one_line_or_is_skipped_and_listed(tiny_corpus, tokenizer, tmp_path):
    corpus = write_with_bad_validation_line(tiny_corpus, tmp_path / "corpus")
    data = data_config(corpus, tmp_path / "cache")
    with pytest.raises(RecordError) as failure:
        prepare_split(data, "validation", tokenizer)
    assert str(failure.value) == (f"{corpus / 'validation.jsonl'}:3: field 'summary': "
                                  "expected a string or a list of strings, found int (see docs/data.md)")
    assert not [path for path in (tmp_path / "cache").iterdir() if path.is_dir()]

    splits = CorpusSplits(replace(data, on_error="skip"), tokenizer)
    skipped = splits.load("validation")
    assert len(skipped) == 7 and skipped.n_errors == 1
    assert [e.line for e in skipped.errors()] == [3]
    assert splits.write_errors(tmp_path / "run") == tmp_path / "run" / "data_errors.jsonl"
    listed = [json.loads(line) for line in (tmp_path / "run" / "data_errors.jsonl").read_text().splitlines()]
    assert listed == [{"split": "validation", "file": str(corpus / "validation.jsonl"), "line": 3,
                       "id": listed[0]["id"], "field": "summary",
                       "reason": "expected a string or a list of strings, found int"}]
    with pytest.raises(RecordError, match=":3: field 'summary'"):  # the folder skip wrote does not hide it
        prepare_split(data, "validation", tokenizer)


def test_a_missing_split_is_a_usage_error(tiny_corpus, tokenizer, tmp_path):
    corpus = copy_corpus(tiny_corpus, tmp_path / "corpus")
    (corpus / "test.jsonl").unlink()
    with pytest.raises(UsageError, match="data split 'test' not found"):
        CorpusSplits(data_config(corpus, tmp_path / "cache"), tokenizer).load("test")


def test_wikisum_is_prepared_shard_by_shard_and_skips_a_malformed_record(tmp_path, monkeypatch):
    def record(k: int) -> dict:
        return {"src": [[20 + k, 21], [22]], "tgt": [4, 30 + k, 5], "tgt_str": f"summary {k}"}

    torch.save([record(0), {"src": [[1], "text"], "tgt": [4, 5]}], tmp_path / "WIKI.train.0.pt")
    torch.save([record(2), record(3)], tmp_path / "WIKI.train.1.pt")
    loads = []
    original = torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **k: loads.append(a[0]) or original(*a, **k))
    data = DataConfig(path=str(tmp_path), format="wikisum", cache_dir=str(tmp_path / "cache"), on_error="skip",
                      title_paragraph=False)
    prepared = prepare_split(data, "train", IdTokenizer())
    assert [e.id for e in prepared] == ["WIKI.train.0-0", "WIKI.train.1-0", "WIKI.train.1-1"]
    assert [e.target for e in prepared] == [[30], [32], [33]]
    assert [str(e) for e in prepared.errors()] == [
        f"{tmp_path / 'WIKI.train.0.pt'}:1: field 'src[1]': expected a list of token ids, found str (see docs/data.md)"]
    assert [Path(p).name for p in loads] == ["WIKI.train.0.pt", "WIKI.train.1.pt"]  # one shard at a time


def test_a_prepared_split_pickles_without_its_memory_maps(tiny_corpus, tokenizer, tmp_path):
    import pickle

    prepared = prepare_split(data_config(tiny_corpus, tmp_path), "train", tokenizer)
    expected = prepared[7]
    copy = pickle.loads(pickle.dumps(prepared))  # as a DataLoader worker started with spawn gets it
    assert isinstance(copy, PreparedSplit) and copy[7] == expected
    assert len(pickle.dumps(prepared)) < 10_000



def test_every_reference_trains_on_each_reference_as_its_own_target(tmp_path):
    from hiersum.data.formats.scitldr import iter_scitldr

    corpus = tmp_path / "scitldr"
    corpus.mkdir()
    records = [{"paper_id": "p1", "source": ["We study ferries.", "They collide."],
                "target": ["Ferries collide.", "A study of ferry collisions."]},
               {"paper_id": "p2", "source": ["Markets rose."], "target": ["Markets went up."]}]
    for split in ("train", "dev"):
        (corpus / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    texts = [t for r in records for t in r["source"] + r["target"]]
    tokenizer = train_tokenizer(texts, vocab_size=120)
    data = data_config(corpus, tmp_path / "cache", format="scitldr", every_reference=True)
    train = prepare_split(data, "train", tokenizer)
    assert [train[i].id for i in range(len(train))] == ["p1", "p1#2", "p2"]
    targets = [tokenizer.decode(train[i].target) for i in range(len(train))]
    references = ["Ferries collide.", "A study of ferry collisions.", "Markets went up."]
    assert targets == [tokenizer.decode(ids) for ids in tokenizer.encode_batch(references)]
    assert train[0].paragraphs == train[1].paragraphs
    first_only = prepare_split(replace(data, every_reference=False), "train", tokenizer)
    assert len(first_only) == 2 and first_only.folder != train.folder
    dev = prepare_split(data, "validation", tokenizer)  # evaluation: one example, every reference
    assert len(dev) == 2 and dev[0].references == records[0]["target"]
    assert sum(1 for e in iter_scitldr(corpus / "train.jsonl")) == 2


@pytest.mark.slow  # spawned tokenizing processes
def test_the_prepared_files_are_the_same_for_any_number_of_tokenizing_processes(tiny_corpus, tokenizer, tmp_path,
                                                                               monkeypatch):
    corpus = copy_corpus(tiny_corpus, tmp_path / "corpus")
    lines = (corpus / "train.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (corpus / "train.jsonl").write_text("".join(lines[:9] + ["{not json\n"] + lines[9:]), encoding="utf-8")
    monkeypatch.setattr(prepared_module, "ENCODE_CHUNK", 7)  # 40 examples: 6 chunks, more than 2 per process in flight
    folders = []
    for workers in (1, 3):
        data = data_config(corpus, tmp_path / f"cache{workers}", on_error="skip", prepare_workers=workers)
        prepared = prepare_split(data, "train", tokenizer, shard_examples=16)
        assert len(prepared) == 40 and prepared.n_errors == 1
        folders.append(prepared.folder)
    files = [sorted(path.relative_to(folder) for path in folder.rglob("*") if path.is_file()) for folder in folders]
    assert files[0] == files[1] and len(files[0]) > 10 and folders[0].name == folders[1].name
    for name in files[0]:
        assert (folders[0] / name).read_bytes() == (folders[1] / name).read_bytes(), name


@pytest.mark.slow  # spawned tokenizing processes
def test_tokenizing_processes_rank_paragraphs_with_a_trained_ranker(tiny_corpus, tokenizer, tmp_path, monkeypatch):
    # the parent's registry holds "ranker" (hiersum.checkpoints.ranker registers it); a spawned process must too
    from hiersum.checkpoints.ranker import save_ranker
    from hiersum.config import RankerModelConfig
    from hiersum.model.ranker import ParagraphRanker

    torch.manual_seed(0)
    network = ParagraphRanker(RankerModelConfig(embedding_dim=8, hidden_size=8), vocab_size=tokenizer.vocab_size,
                              pad_id=tokenizer.special.pad)
    ranker = save_ranker(tmp_path / "ranker.pt", network, tokenizer)
    monkeypatch.setattr(prepared_module, "ENCODE_CHUNK", 7)  # several chunks: the processes start
    data = data_config(tiny_corpus, tmp_path / "cache", selection="ranker", ranker=str(ranker), title_paragraph=False,
                       prepare_workers=2)
    prepared = prepare_split(data, "train", tokenizer, shard_examples=16)
    expected = encode_examples(read_split(tiny_corpus / "train.jsonl"), tokenizer, encoding_config(data))
    assert [prepared[i] for i in range(len(prepared))] == expected
    assert any(example.provenance != sorted(example.provenance) for example in expected)  # not document order


def test_prepare_workers_must_be_at_least_one(tiny_corpus, tmp_path):
    with pytest.raises(ValueError, match="data.prepare_workers must be >= 1 or null, found 0"):
        data_config(tiny_corpus, tmp_path, prepare_workers=0)
