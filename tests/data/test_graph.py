"""Data side of the extensions: paragraph graphs, the flat source layout, the ranked WikiSum reader and
the official SentencePiece tokenizer."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import torch

from hiersum.config import DataConfig, ModelConfig
from hiersum.data.batching import FlatLayout, SourceLayout, collate, flat_layout, flatten_paragraphs
from hiersum.data.datamodule import SummarizationDataModule
from hiersum.data.graph import discourse_graph, entity_mentions, paragraph_graph, similarity_graph
from hiersum.data.schema import EncodedExample, Example
from hiersum.data.selection import SelectionConfig, encode_examples
from hiersum.data.tokenizer import load_tokenizer, train_tokenizer
from hiersum.data.wikisum import load_shard, read_wikisum, shard_paths

SPM = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "hiersumm" / "spm9998_3.model"
MULTI_NEWS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "multi-news-sample" / "validation.jsonl"
TEXTS = [
    "Marela Dostovin founded the Ilvane Institute in Ostrel.",
    "The Ilvane Institute trains glass makers in Ostrel.",
    "Rain fell on the harbour all week.",
]


def test_similarity_graph_is_a_symmetric_tfidf_cosine():
    graph = similarity_graph(TEXTS)
    assert [graph[i][i] for i in range(3)] == [0.0, 0.0, 0.0]
    assert graph[0][1] == graph[1][0] and 0 < graph[0][1] < 1
    assert graph[0][1] > graph[0][2] > 0  # "the" is shared by all three, weighted down by idf
    assert similarity_graph(["same words here", "same words here"])[0][1] == pytest.approx(1.0)
    assert similarity_graph(["", "text"]) == [[0.0, 0.0], [0.0, 0.0]]


def test_discourse_graph_links_paragraphs_sharing_entity_mentions():
    assert entity_mentions(TEXTS[1]) == {"Ilvane", "Institute", "Ostrel"}  # sentence-initial "The" left out
    graph = discourse_graph(TEXTS)
    assert graph[0][1] == graph[1][0] == pytest.approx(1.0)  # all of paragraph 1's mentions recur in 0
    assert graph[0][2] == graph[1][2] == 0.0 and graph[2][2] == 0.0
    assert paragraph_graph(TEXTS, "none") is None
    with pytest.raises(ValueError, match="unknown paragraph graph"):
        paragraph_graph(TEXTS, "pagerank")


class WordTokenizer:
    """One id per word (10 + its length), enough for selection tests."""

    def encode_batch(self, texts):
        return [[10 + len(word) for word in text.split()] for text in texts]


def test_encode_examples_stores_the_graph_of_the_kept_paragraphs():
    example = Example(id="x", title="Marela Dostovin", documents=[TEXTS], references=["Marela founded it."])
    config = SelectionConfig(max_paragraphs=3, max_paragraph_tokens=4, max_target_tokens=8, graph="discourse")
    (encoded,) = encode_examples([example], WordTokenizer(), config)
    assert len(encoded.paragraphs) == len(encoded.graph) == 3  # title + 2 paragraphs
    assert encoded.graph == discourse_graph(["Marela Dostovin", *TEXTS[:2]])
    (plain,) = encode_examples([example], WordTokenizer(), SelectionConfig(3, 4, 8))
    assert plain.graph is None


def example(i: int, paragraphs: list[list[int]], graph=None) -> EncodedExample:
    return EncodedExample(id=str(i), paragraphs=paragraphs, target=[11], references=["r"], provenance=[], graph=graph)


def test_collate_pads_graphs_with_zeros():
    batch = collate([example(0, [[7], [8]], [[0.0, 0.5], [0.5, 0.0]]), example(1, [[9]], [[0.0]]),
                     example(2, [[7], [8], [9]], [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])],
                    pad_id=0, bos_id=1, eos_id=2)
    assert batch.paragraph_graph.shape == (3, 3, 3)
    assert batch.paragraph_graph[0].tolist() == [[0.0, 0.5, 0.0], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert batch.paragraph_graph[1].abs().sum() == 0
    assert collate([example(0, [[7]])], pad_id=0, bos_id=1, eos_id=2).paragraph_graph is None


def test_flat_layout_joins_paragraphs_cuts_and_appends_eos():
    layout = FlatLayout(max_tokens=6, separator_id=3)
    assert flatten_paragraphs([[7, 8], [9], [10, 11, 12]], layout, eos_id=2) == [7, 8, 3, 9, 3, 10, 2]
    assert flatten_paragraphs([], layout, eos_id=2) == [2]
    batch = collate([example(0, [[7, 8], [9]]), example(1, [[10]])], pad_id=0, bos_id=1, eos_id=2, flat=layout)
    assert batch.src.tolist() == [[7, 8, 3, 9, 2], [10, 2, 0, 0, 0]]
    assert batch.src_mask.tolist() == [[True] * 5, [True, True, False, False, False]]
    assert batch.paragraph_graph is None


def test_flat_layout_of_a_model_uses_the_paragraph_token():
    tokenizer = train_tokenizer(TEXTS * 5, vocab_size=80)
    assert flat_layout(SourceLayout.GRID, ModelConfig(), tokenizer) is None
    layout = flat_layout(SourceLayout.FLAT, ModelConfig(encoder="flat", inter_layers=[], flat_max_tokens=77), tokenizer)
    assert layout == FlatLayout(max_tokens=77, separator_id=tokenizer.backend.token_to_id("<p>"))
    assert layout.separator_id not in (tokenizer.special.pad, tokenizer.special.eos)
    assert tokenizer.decode([*tokenizer.encode_batch(["Rain"])[0], layout.separator_id]) == "Rain"


def write_shards(folder: Path) -> None:
    """Two train shards and a test shard in the release's format (paragraph and target ids)."""
    def record(k: int) -> dict:
        return {"src": [[20 + k, 21, 22], [23, 24], [25 + k]], "tgt": [4, 30 + k, 8, 31, 5], "tgt_str": f"summary {k}"}

    torch.save([record(0), record(1)], folder / "WIKI.train.0.pt")
    torch.save([record(2)], folder / "WIKI.train.1.pt")
    torch.save([record(3)], folder / "WIKI.test.0.pt")


class SpecialTokenizer:
    """Stands in for the SentencePiece tokenizer: official special ids, ids decoded as words."""

    class special:
        pad, bos, eos = 6, 4, 5

    paragraph_separator_id = 5  # as a vocabulary without a paragraph token: EOS

    def decode(self, ids):
        return " ".join(f"W{i}" for i in ids)


def test_wikisum_reader_keeps_ranked_paragraphs_and_strips_bos_eos(tmp_path):
    write_shards(tmp_path)
    torch.save([{"src": [[1]], "tgt": [4, 5]}], tmp_path / "WIKI.train.10.pt")
    names = [p.name for p in shard_paths(tmp_path, "train")]
    assert names == ["WIKI.train.0.pt", "WIKI.train.1.pt", "WIKI.train.10.pt"]  # by shard number
    config = SelectionConfig(max_paragraphs=2, max_paragraph_tokens=2, max_target_tokens=2, graph="similarity")
    examples, encoded = read_wikisum(tmp_path, "train", SpecialTokenizer(), config, with_text=True)
    assert [e.id for e in encoded] == ["WIKI.train.0-0", "WIKI.train.0-1", "WIKI.train.1-0", "WIKI.train.10-0"]
    first = encoded[1]
    assert first.paragraphs == [[21, 21], [23, 24]] and first.target == [31, 8]
    assert first.references == ["summary 1"] and first.provenance == [(0, 0), (0, 1)]
    assert first.n_dropped_paragraphs == 1 and len(first.graph) == 2 and first.graph[0][1] == 0.0
    assert examples[1].documents == [["W21 W21 W22", "W23 W24"]]  # whole paragraphs, for the lead baseline
    with pytest.raises(FileNotFoundError, match="WIKI.valid.N.pt"):
        shard_paths(tmp_path, "validation")


def test_wikisum_shard_errors_name_file_record_and_field(tmp_path):
    torch.save([{"src": [[1, 2], "text"], "tgt": [4, 5]}], tmp_path / "WIKI.test.0.pt")
    with pytest.raises(ValueError, match=r"WIKI.test.0.pt: record 0: field 'src\[1\]'"):
        load_shard(tmp_path / "WIKI.test.0.pt")


def test_datamodule_reads_wikisum_with_more_paragraphs_at_test(tmp_path):
    write_shards(tmp_path)
    data = DataConfig(path=str(tmp_path), format="wikisum", max_paragraphs=2, eval_max_paragraphs=3,
                      max_paragraph_tokens=8, max_target_tokens=8, title_paragraph=False, batch_tokens=64)
    flat = ModelConfig(encoder="flat", inter_layers=[], flat_max_tokens=5)
    datamodule = SummarizationDataModule(data, SpecialTokenizer(), model=flat, layout=SourceLayout.FLAT)
    assert [len(e.paragraphs) for e in datamodule.load_split("train")] == [2, 2, 2]
    assert [len(e.paragraphs) for e in datamodule.load_split("test")] == [3]
    assert datamodule.examples["test"][0].references == ["summary 3"]
    batch = next(iter(datamodule.loader("test", distributed=False)))
    assert batch.src.tolist() == [[23, 21, 22, 5, 23, 5]]  # paragraphs joined with EOS (no <P> token), cut, EOS


@pytest.mark.skipif(not SPM.is_file(), reason="official SentencePiece model not found")
def test_official_sentencepiece_model_loads_with_its_special_ids():
    pytest.importorskip("google.protobuf")
    tokenizer = load_tokenizer(SPM)
    assert tokenizer.vocab_size == 32000
    assert (tokenizer.special.pad, tokenizer.special.bos, tokenizer.special.eos) == (6, 4, 5)
    assert tokenizer.paragraph_separator_id == 7
    ids = tokenizer.encode_batch(["the ,  ."])[0]
    assert ids == [9, 10, 11]  # pieces "▁the", "▁,", "▁." (extra spaces collapsed)
    assert tokenizer.encode_batch(["a <Q> b"])[0].count(8) == 1
    text = "the school was founded in 1987 by the city council ."
    assert tokenizer.decode(tokenizer.encode_batch([text])[0] + [5, 9]) == text


@pytest.mark.skipif(not (SPM.is_file() and MULTI_NEWS.is_file()),
                    reason="official SentencePiece model or Multi-News sample not found")
def test_official_tokenizer_encodes_like_sentencepiece_itself():
    """The HF conversion gives sentencepiece's own ids on real news text (100 Multi-News documents)
    and on text where normalisation matters (NFKC, ligatures, full-width letters, quotes, spaces)."""
    sentencepiece = pytest.importorskip("sentencepiece")
    pytest.importorskip("google.protobuf")
    reference = sentencepiece.SentencePieceProcessor(model_file=str(SPM))
    tokenizer = load_tokenizer(SPM)
    texts = ["Café naïve — “quoted” 1987…", "ﬁne Ⅻ ＡＢＣ", "  leading,   inner  and trailing  ", "tab\there\nline",
             "日本語 テキスト", "emoji 😀 and \u00a0no-break space"]
    with open(MULTI_NEWS, encoding="utf-8") as handle:
        texts += [json.loads(line)["document"][:3000] for line in itertools.islice(handle, 100)]
    mismatched = [text[:60] for text in texts if tokenizer.encode_batch([text])[0] != reference.encode(text)]
    assert mismatched == []
