"""``data.format=line_pairs`` (:mod:`hiersum.data.formats.line_pairs`): ``{split}.source`` + ``{split}.target`` one
example a line, the presets ``data=neus`` and ``data=multinews_original`` read into the records their JSONL
equivalents give, the ``.src`` / ``.src.cleaned`` / ``.tgt`` suffixes, different line counts and bad lines refused
naming file and line (or skipped and counted), the layout in a prepared split's key, ``hiersum summarize``'s
reading of a source file alone, ``hiersum prepare`` and ``hiersum evaluate`` on such a folder; and the shared NeuS
release."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from hiersum.commands.evaluate import effective_data_config, evaluate
from hiersum.commands.prepare import prepare
from hiersum.commands.summarize import summarize, with_trained_layout
from hiersum.config import DataConfig, SummarizeConfig
from hiersum.data.corpus_splits import CorpusSplits, read_corpus_split, read_text_split
from hiersum.data.formats import read_records
from hiersum.data.formats.registry import data_format, format_spec
from hiersum.data.prepared import split_folder, split_manifest
from hiersum.data.schema import Example, RecordError
from hiersum.data.tokenizer import train_tokenizer
from hiersum.errors import UsageError
from tests.helpers.cli import assert_usage_error, run_in_process
from tests.helpers.config import compose_config
from tests.helpers.paths import SHARED_DIR

NEUS = SHARED_DIR / "data" / "neus"
NEUS_LAYOUT = {"document_separator": " [SEP] ", "paragraph_markers": ["TITLE=>", "ARTICLE=>"]}
MULTINEWS_LAYOUT = {"document_separator": "story_separator_special_tag", "paragraph_markers": ["NEWLINE_CHAR"],
                    "summary_prefix": "–"}

NEUS_SOURCES = [
    "TITLE=> Storm hits the coast. ARTICLE=> A storm hit the coast on Monday.  Thousands lost power. [SEP] "
    "TITLE=> Coast battered. ARTICLE=> Winds of 90 mph battered the coast. [SEP] TITLE=> Power out. ARTICLE=> ",
    "TITLE=> Senate passes the bill. ARTICLE=> The Senate passed the bill 51-49. [SEP] TITLE=> Bill clears Senate. "
    "ARTICLE=> A narrow vote sent the bill on. [SEP] TITLE=> A win for the party. ARTICLE=> The party won a vote.",
]
NEUS_TARGETS = [
    "TITLE=> Storm Batters Coast. ARTICLE=> A storm hit the coast, cutting power to thousands.",
    "TITLE=> Senate Passes Bill. ARTICLE=> The Senate narrowly passed the bill.",
]
NEUS_JSONL = [  # what data=jsonl reads from val.jsonl: the same examples, ids by default <stem>-<line>
    {"documents": [["Storm hits the coast.", "A storm hit the coast on Monday. Thousands lost power."],
                   ["Coast battered.", "Winds of 90 mph battered the coast."], ["Power out."]],
     "summary": "Storm Batters Coast.\nA storm hit the coast, cutting power to thousands."},
    {"documents": [["Senate passes the bill.", "The Senate passed the bill 51-49."],
                   ["Bill clears Senate.", "A narrow vote sent the bill on."],
                   ["A win for the party.", "The party won a vote."]],
     "summary": "Senate Passes Bill.\nThe Senate narrowly passed the bill."},
]

MULTINEWS_SOURCES = [
    "First paragraph of one. NEWLINE_CHAR NEWLINE_CHAR Its second paragraph. story_separator_special_tag "
    "Another article, one paragraph. NEWLINE_CHAR NEWLINE_CHAR story_separator_special_tag ",
    "A single article NEWLINE_CHAR NEWLINE_CHAR in two paragraphs.",
]
MULTINEWS_TARGETS = ["– The first cluster's summary.", "– The second summary."]


def write_lines(path: Path, lines: list[str] | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(lines, bytes):
        path.write_bytes(lines)
    else:
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def write_pair(folder: Path, stem: str, sources: list[str] | bytes, targets: list[str] | bytes,
               suffixes: tuple[str, str] = (".source", ".target")) -> Path:
    write_lines(folder / f"{stem}{suffixes[0]}", sources)
    write_lines(folder / f"{stem}{suffixes[1]}", targets)
    return folder


def neus_config(path: Path, **changes) -> DataConfig:
    return DataConfig(path=str(path), format="line_pairs", **{**NEUS_LAYOUT, **changes})


@pytest.fixture()
def neus_corpus(tmp_path: Path) -> Path:
    """A NeuS-shaped folder: ``{train,val,test}.{source,target}`` (train: the two lines ten times)."""
    folder = tmp_path / "neus"
    write_pair(folder, "train", NEUS_SOURCES * 10, NEUS_TARGETS * 10)
    write_pair(folder, "val", NEUS_SOURCES, NEUS_TARGETS)
    return write_pair(folder, "test", NEUS_SOURCES, NEUS_TARGETS)


def test_a_neus_line_reads_as_its_jsonl_would_headlines_as_first_paragraphs(neus_corpus, tmp_path):
    examples, errors = read_text_split(neus_config(neus_corpus), "validation")
    write_lines(tmp_path / "jsonl" / "val.jsonl", [json.dumps(record) for record in NEUS_JSONL])
    assert errors == [] and examples == read_corpus_split(tmp_path / "jsonl", "val", "jsonl")
    assert [e.id for e in examples] == ["val-1", "val-2"]
    assert examples[0].documents[2] == ["Power out."]  # an article without text: its headline alone


def test_the_original_multinews_release_reads_as_its_hugging_face_jsonl(tmp_path):
    """``.src`` / ``.tgt``; an empty article dropped, paragraphs at ``NEWLINE_CHAR``, the summary's ``– `` dropped:
    the records data=multinews gives for the same clusters as the Hub's ``multi_news`` has them."""
    write_pair(tmp_path / "original", "val", MULTINEWS_SOURCES, MULTINEWS_TARGETS, (".src", ".tgt"))
    hub = [{"document": source.replace("NEWLINE_CHAR", "\n").replace("story_separator_special_tag", "|||||"),
            "summary": target} for source, target in zip(MULTINEWS_SOURCES, MULTINEWS_TARGETS, strict=True)]
    write_lines(tmp_path / "hub" / "val.jsonl", [json.dumps(record) for record in hub])
    config = DataConfig(path=str(tmp_path / "original"), format="line_pairs", **MULTINEWS_LAYOUT)
    examples, _ = read_text_split(config, "validation")
    assert examples == read_corpus_split(tmp_path / "hub", "val", "multinews")
    assert examples[0].documents == [["First paragraph of one.", "Its second paragraph."],
                                     ["Another article, one paragraph."]]
    assert examples[1].references == ["The second summary."]


def test_a_line_without_a_layout_is_one_document_of_one_paragraph_as_its_jsonl_would_be(tmp_path):
    sources = ["Mars has two  small moons, Phobos and Deimos.", "Water boils at a lower temperature up a mountain."]
    targets = ["Mars has two moons.  ", "Water boils sooner in the mountains."]
    write_pair(tmp_path / "pairs", "test", sources, targets)
    write_lines(tmp_path / "jsonl" / "test.jsonl", [json.dumps({"documents": [source], "summary": target})
                                                    for source, target in zip(sources, targets, strict=True)])
    examples, _ = read_text_split(DataConfig(path=str(tmp_path / "pairs"), format="line_pairs"), "test")
    assert examples == read_corpus_split(tmp_path / "jsonl", "test", "jsonl")
    assert examples[0].documents == [["Mars has two small moons, Phobos and Deimos."]]


@pytest.mark.parametrize(("preset", "layout"), [("neus", NEUS_LAYOUT), ("multinews_original", MULTINEWS_LAYOUT),
                                                ("line_pairs", {})])
def test_the_presets_set_the_format_and_its_layout(preset, layout, tmp_path):
    data = compose_config("train", [f"data={preset}", "data.path=/data/x"], tmp_path).data
    assert data.format == "line_pairs"
    expected = {"document_separator": None, "paragraph_markers": [], "summary_prefix": None, **layout}
    assert {name: data[name] for name in expected} == expected


@pytest.mark.parametrize("suffixes", [(".source", ".target"), (".src", ".tgt"), (".src.cleaned", ".tgt")])
def test_each_suffix_pair_is_found_and_validation_is_val_or_validation(suffixes, tmp_path):
    for stem in ("val", "validation"):
        folder = write_pair(tmp_path / f"{stem}{suffixes[0]}", stem, ["one document"], ["its summary"], suffixes)
        spec = format_spec("line_pairs")
        assert spec.input_files(folder, "validation") == [folder / f"{stem}{suffix}" for suffix in suffixes]
        assert list(spec.split_records(folder, "validation")) == [
            Example(id=f"{stem}-1", title="", documents=[["one document"]], references=["its summary"])]


def test_the_cleaned_source_is_read_before_the_raw_one(tmp_path):
    folder = write_pair(tmp_path, "train", ["raw text"], ["summary"], (".src", ".tgt"))
    write_lines(folder / "train.src.cleaned", ["cleaned text"])
    assert read_corpus_split(folder, "train", "line_pairs")[0].documents == [["cleaned text"]]


def test_a_missing_split_or_target_is_one_line_naming_the_files(tmp_path):
    folder = write_pair(tmp_path, "train", ["text"], ["summary"])
    with pytest.raises(UsageError, match=r"data split 'test' not found: expected the files .*/test\.source and "
                                         r"test\.target \(or \.src / \.src\.cleaned and \.tgt"):
        read_text_split(neus_config(folder), "test")
    write_lines(folder / "val.src", ["text"])
    with pytest.raises(UsageError, match=r"data split 'validation': found the source file .*/val\.src but not its "
                                         r"target val\.tgt"):
        read_text_split(neus_config(folder), "validation")


@pytest.mark.parametrize("on_error", ["fail", "skip"])
def test_different_line_counts_are_refused_naming_both_files_and_counts(on_error, neus_corpus):
    source, target = neus_corpus / "val.source", neus_corpus / "val.target"
    write_lines(target, NEUS_TARGETS[:1])
    expected = rf"^{source} has 2 lines but {target} has 1: expected one target line for each source line"
    with pytest.raises(UsageError, match=expected):  # a misaligned split, not a bad record: skip does not skip it
        read_text_split(neus_config(neus_corpus, on_error=on_error), "validation")
    tokenizer = train_tokenizer(NEUS_SOURCES * 20, vocab_size=150)
    with pytest.raises(UsageError, match=expected):  # before anything is prepared
        CorpusSplits(replace(neus_config(neus_corpus, on_error=on_error), cache_dir=str(neus_corpus / "c")),
                     tokenizer).load("validation")
    write_lines(source, [*NEUS_SOURCES[:1], "", "x"])  # a blank line counts, and a last line without its newline
    source.write_bytes(source.read_bytes()[:-1])
    with pytest.raises(UsageError, match=rf"{source} has 3 lines but {target} has 1"):
        read_text_split(neus_config(neus_corpus), "validation")


BAD_LINES = [  # (source line, target line, file, message)
    ("", "TITLE=> A. ARTICLE=> B.", "val.source",
     "expected the text of an example's documents separated by ' [SEP] ', found an empty line"),
    (" [SEP] TITLE=> ARTICLE=>  [SEP] ", "TITLE=> A. ARTICLE=> B.", "val.source",
     "expected the text of an example's documents separated by ' [SEP] ', found no text once cut at the separators"),
    (NEUS_SOURCES[0], "  ", "val.target", "expected a reference summary, found an empty line"),
    (NEUS_SOURCES[0], "TITLE=>  ARTICLE=> ", "val.target",
     "expected a reference summary, found none once the prefix and markers are dropped"),
    (NEUS_SOURCES[0].encode() + b" caf\xe9", NEUS_TARGETS[0], "val.source",
     "expected UTF-8 text, found an invalid byte at column"),
]


@pytest.mark.parametrize(("source", "target", "file", "message"), BAD_LINES)
def test_a_bad_line_names_its_file_and_line_or_is_skipped_and_counted(source, target, file, message, neus_corpus):
    def line(text: str | bytes) -> bytes:
        return text if isinstance(text, bytes) else text.encode()

    sources = b"\n".join([line(NEUS_SOURCES[0]), line(source), line(NEUS_SOURCES[1])]) + b"\n"
    targets = b"\n".join([line(NEUS_TARGETS[0]), line(target), line(NEUS_TARGETS[1])]) + b"\n"
    write_pair(neus_corpus, "val", sources, targets)
    with pytest.raises(RecordError, match=f"^{re.escape(f'{neus_corpus / file}:2: {message}')}"):
        read_text_split(neus_config(neus_corpus), "validation")
    examples, errors = read_text_split(neus_config(neus_corpus, on_error="skip"), "validation")
    assert [e.id for e in examples] == ["val-1", "val-3"]
    assert [(e.path, e.line, e.record_id) for e in errors] == [(str(neus_corpus / file), 2, "val-2")]


def test_a_line_blank_in_both_files_is_passed_over_keeping_the_line_numbers(neus_corpus):
    write_pair(neus_corpus, "val", [NEUS_SOURCES[0], "", NEUS_SOURCES[1], ""], [NEUS_TARGETS[0], " ", *NEUS_TARGETS[1:],
                                                                                  ""])
    examples, errors = read_text_split(neus_config(neus_corpus), "validation")
    assert [e.id for e in examples] == ["val-1", "val-3"] and errors == []


def test_the_layout_is_part_of_a_prepared_splits_key_and_other_formats_keys_are_unchanged(neus_corpus):
    tokenizer = train_tokenizer(NEUS_SOURCES * 20, vocab_size=150)
    config = replace(neus_config(neus_corpus), cache_dir=str(neus_corpus / "cache"))
    manifest = split_manifest(config, "validation", tokenizer)
    assert manifest["layout"] == {**NEUS_LAYOUT, "summary_prefix": None}
    other = replace(config, paragraph_markers=[])
    assert split_folder(other, split_manifest(other, "validation", tokenizer)) != split_folder(config, manifest)
    examples, encoded = CorpusSplits(config, tokenizer).evaluation_split("validation")
    assert [e.id for e in encoded] == ["val-1", "val-2"] and examples[1].documents[0][0] == "Senate passes the bill."
    assert len(encoded[1].paragraphs) == 6  # three headlines, three texts


def test_a_format_without_options_keys_no_layout(tmp_path):
    tokenizer = train_tokenizer(NEUS_SOURCES * 20, vocab_size=150)
    write_lines(tmp_path / "validation.jsonl", [json.dumps(record) for record in NEUS_JSONL])
    assert "layout" not in split_manifest(DataConfig(path=str(tmp_path)), "validation", tokenizer)
    assert data_format(DataConfig(path=str(tmp_path))) is format_spec("jsonl")


def test_summarize_reads_a_source_file_alone_with_the_corpus_ids(neus_corpus, tmp_path):
    corpus, _ = read_text_split(neus_config(neus_corpus), "validation")
    read = list(read_records(neus_corpus / "val.source", layout=NEUS_LAYOUT))  # auto: a .source file
    assert read == [replace(example, references=[]) for example in corpus]
    unsplit = list(read_records(neus_corpus / "val.source", input_format="line_pairs"))
    assert [len(example.documents) for example in unsplit] == [1, 1]  # no layout: a line is one document
    write_lines(tmp_path / "in.src", [NEUS_SOURCES[0], " [SEP] "])
    records = list(read_records(tmp_path / "in.src", layout=NEUS_LAYOUT))
    assert isinstance(records[1], RecordError) and str(records[1]).startswith(f"{tmp_path / 'in.src'}:2: expected")


def test_summarize_takes_the_layout_it_is_not_given_from_the_checkpoint(tmp_path):
    cfg = SummarizeConfig(task_name="summarize", checkpoint="c.ckpt", input="test.source", input_format="auto",
                          output="o.jsonl", resume=True, overwrite=False, strict=False, device="cpu", devices=1,
                          shard=None, sort_window=8, attention=False, paths={}, document_separator=None,
                          paragraph_markers=["ARTICLE=>"])
    trained = DataConfig(path="neus", format="line_pairs", **NEUS_LAYOUT)
    resolved = with_trained_layout(cfg, trained)
    assert (resolved.document_separator, resolved.paragraph_markers) == (" [SEP] ", ["ARTICLE=>"])  # given: kept
    assert with_trained_layout(replace(cfg, input="in.jsonl"), trained) == replace(cfg, input="in.jsonl")
    assert with_trained_layout(cfg, None) is cfg


def test_evaluate_takes_the_layout_with_the_checkpoints_format_unless_a_preset_gives_it():
    trained = DataConfig(path="neus", format="line_pairs", **NEUS_LAYOUT)
    kept = effective_data_config(trained, DataConfig(path="neus-test"), {"path"})
    assert (kept.format, kept.document_separator, kept.paragraph_markers) == ("line_pairs", " [SEP] ",
                                                                              NEUS_LAYOUT["paragraph_markers"])
    given = DataConfig(path="mn", format="line_pairs", **MULTINEWS_LAYOUT)
    other = effective_data_config(trained, given, {"path", "format", "document_separator", "paragraph_markers",
                                                   "summary_prefix"})
    assert (other.document_separator, other.summary_prefix) == ("story_separator_special_tag", "–")


def test_prepare_on_a_line_pair_folder_skips_and_lists_a_bad_line(neus_corpus, tmp_path, capsys):
    write_pair(neus_corpus, "val", [NEUS_SOURCES[0], " [SEP] ", NEUS_SOURCES[1]], NEUS_TARGETS[:1] * 3)
    options = ["data=neus", f"data.path={neus_corpus}", "data.on_error=skip", "tokenizer.vocab_size=150",
               f"data.cache_dir={tmp_path / 'cache'}"]
    report = prepare(compose_config("prepare", options, tmp_path / "prepare"))
    assert {split: (entry["examples"], entry["errors"]) for split, entry in report.items()} == {
        "train": (20, 0), "validation": (2, 1), "test": (2, 0)}
    errors_file = tmp_path / "prepare" / "data_errors.jsonl"
    assert f"1 records skipped (see {errors_file})" in capsys.readouterr().out
    [listed] = [json.loads(line) for line in errors_file.read_text().splitlines()]
    assert (listed["split"], listed["file"], listed["line"], listed["id"]) == (
        "validation", str(neus_corpus / "val.source"), 2, "val-2")


def test_evaluate_scores_predictions_against_a_line_pair_folder_end_to_end(neus_corpus, tmp_path, monkeypatch,
                                                                          capsys):
    """``hiersum-evaluate predictions=... data=neus`` as the console script runs it (in process), then a bad line:
    exit status 2 and one line naming file and line."""
    predictions = tmp_path / "p.jsonl"
    write_lines(predictions, [json.dumps({"id": f"val-{n}", "summary": target.split("ARTICLE=> ")[1]})
                              for n, target in enumerate(NEUS_TARGETS, start=1)])
    args = [f"predictions={predictions}", "data=neus", f"data.path={neus_corpus}", "split=validation",
            "bootstrap.samples=0", "baselines=[lead]", f"hydra.run.dir={tmp_path / 'eval'}"]
    result = run_in_process("hiersum-evaluate", args, monkeypatch, capsys)
    assert result.returncode == 0, result.stderr
    metrics = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    assert metrics["n_examples"] == 2 and metrics["data_format"] == "line_pairs"
    assert 50 < metrics["validation"]["model"]["rouge1"] < 100  # the text without the headline
    write_pair(neus_corpus, "val", [NEUS_SOURCES[0], ""], NEUS_TARGETS)
    result = run_in_process("hiersum-evaluate", args, monkeypatch, capsys)
    assert_usage_error(result.returncode, result.stderr, f"{neus_corpus / 'val.source'}:2: expected the text")


@pytest.mark.skipif(not NEUS.is_dir(), reason="shared NeuS data not present")
def test_the_shared_neus_validation_split_reads_a_record_a_line_of_three_articles(tmp_path):
    n_lines = len((NEUS / "val.source").read_bytes().splitlines())
    assert n_lines == len((NEUS / "val.target").read_bytes().splitlines())
    config = OmegaConf.to_object(compose_config("train", ["data=neus", f"data.path={NEUS}"], tmp_path).data)
    examples, errors = read_text_split(config, "validation")
    assert errors == [] and len(examples) == n_lines == 307
    assert [e.id for e in examples[:2]] == ["val-1", "val-2"]
    assert all(len(e.documents) >= 2 for e in examples)
    assert all(len(e.documents) == 3 and all(1 <= len(d) <= 2 for d in e.documents) for e in examples)
    assert all(len(e.references) == 1 and e.references[0].count("\n") == 1 for e in examples)
    assert not any("TITLE=>" in p or "ARTICLE=>" in p or "[SEP]" in p for e in examples for d in e.documents for p in d)



@pytest.mark.slow
def test_summarize_a_source_file_then_evaluate_its_summaries_against_the_folder(checkpoint, neus_corpus, tiny_cfg,
                                                                                tmp_path, capsys):
    """``hiersum summarize input=val.source`` with the layout given (the session's checkpoint was trained on JSONL),
    a line without text reported and the others summarized; then ``hiersum evaluate predictions=`` of its output
    against the folder with ``data=neus``: the ids match."""
    write_pair(neus_corpus, "val", [NEUS_SOURCES[0], " [SEP] ", NEUS_SOURCES[1]], NEUS_TARGETS[:1] * 3)
    output = tmp_path / "out.jsonl"
    result = summarize(tiny_cfg(f"checkpoint={checkpoint}", f"input={neus_corpus / 'val.source'}", f"output={output}",
                                "document_separator=' [SEP] '", 'paragraph_markers=["TITLE=>","ARTICLE=>"]',
                                "decode=greedy", "decode.max_length=8", name="summarize",
                                output_dir=tmp_path / "hydra"))
    assert (result.written, result.errors) == (2, 1)
    assert f"{neus_corpus / 'val.source'}:2: expected the text" in capsys.readouterr().err
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["id"] for line in lines] == ["val-1", "val-3"] and lines[0]["n_paragraphs_kept"] >= 5
    provenance = json.loads((tmp_path / "out.provenance.json").read_text())
    assert provenance["options"]["document_separator"] == " [SEP] "
    metrics = evaluate(tiny_cfg(f"predictions={output}", "data=neus", f"data.path={neus_corpus}", "split=validation",
                                "data.on_error=skip", "bootstrap.samples=0", "baselines=[lead]", name="evaluate",
                                output_dir=tmp_path / "eval"))
    assert metrics["n_examples"] == 2 and metrics["records_skipped"] == 1
