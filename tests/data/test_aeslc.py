"""``data=aeslc``: the AESLC release's folders of ``.subject`` files (:mod:`hiersum.data.formats.aeslc`): the body's
lines as paragraphs, the subject then the annotators' subjects as references, the dev folder as the validation
split, malformed files refused naming file, line and section; a prepared split and its fingerprinted files;
``hiersum summarize`` refusing the format in one line; and the shared corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from hiersum.config import DataConfig
from hiersum.data.corpus_splits import CorpusSplits, read_corpus_split, read_text_split
from hiersum.data.formats import InputError, read_records
from hiersum.data.formats.registry import format_spec
from hiersum.data.schema import Example, RecordError
from hiersum.data.tokenizer import train_tokenizer
from hiersum.errors import UsageError
from tests.helpers.paths import SHARED_DIR

AESLC = SHARED_DIR / "data" / "aeslc"
TRAIN_FILE = "Hi Phillip,  the meeting is\nat 9:00 am.\n\nThanks,\n\n@subject\nMeeting  confirmation\n"
DEV_FILE = (TRAIN_FILE + "\n@ann0\nmeeting at nine\n\n@ann1\nconfirming the meeting\n\n@ann2\nmeeting")
BODY = ["Hi Phillip, the meeting is", "at 9:00 am.", "Thanks,"]


def write_release(root: Path, files: dict[str, dict[str, str | bytes]]) -> Path:
    """``root/enron_subject_line/<folder>/<name>.subject`` for each ``{folder: {name: text}}``; returns ``root``."""
    for folder, named in files.items():
        (root / "enron_subject_line" / folder).mkdir(parents=True)
        for name, text in named.items():
            data = text.encode("utf-8") if isinstance(text, str) else text
            (root / "enron_subject_line" / folder / f"{name}.subject").write_bytes(data)
    return root


@pytest.fixture()
def release(tmp_path: Path) -> Path:
    return write_release(tmp_path / "aeslc", {
        "train": {"b_sent_2": TRAIN_FILE, "a_inbox_1": "@ not a marker\n" + TRAIN_FILE},
        "dev": {"c_inbox_3": DEV_FILE},
        "test": {"d_sent_4": DEV_FILE.replace("@ann1\nconfirming the meeting", "@ann1")},
    })


def test_the_body_is_the_document_and_the_subjects_the_references(release):
    train = read_corpus_split(release, "train", "aeslc")
    assert train == [  # sorted by file name; a line merely starting with @ is text
        Example(id="a_inbox_1", title="", documents=[["@ not a marker", *BODY]], references=["Meeting confirmation"]),
        Example(id="b_sent_2", title="", documents=[BODY], references=["Meeting confirmation"]),
    ]
    dev = ["Meeting confirmation", "meeting at nine", "confirming the meeting", "meeting"]
    for data_path in (release, release / "enron_subject_line"):  # the folder holding the release, or the release
        assert [e.references for e in read_corpus_split(data_path, "validation", "aeslc")] == [dev]
    assert read_corpus_split(release, "dev", "aeslc")[0].id == "c_inbox_3"
    assert read_corpus_split(release, "test", "aeslc")[0].references == [dev[0], dev[1], dev[3]]  # an empty @ann1


def test_the_split_files_are_fingerprinted_and_prepared(release, tmp_path):
    spec = format_spec("aeslc")
    folder = release / "enron_subject_line" / "train"
    assert spec.input_files(release, "train") == [folder / "a_inbox_1.subject", folder / "b_sent_2.subject"]
    data = DataConfig(path=str(release), format="aeslc", cache_dir=str(tmp_path / "cache"), max_target_tokens=24)
    tokenizer = train_tokenizer([TRAIN_FILE, DEV_FILE] * 20, vocab_size=120)
    examples, encoded = CorpusSplits(data, tokenizer).evaluation_split("validation")
    assert encoded[0].id == "c_inbox_3" and len(encoded[0].paragraphs) == 3 and len(examples[0].references) == 4


@pytest.mark.parametrize(("text", "line", "field", "message"), [
    ("the body\n\n@subject\n\n", 3, "subject", "expected the subject line after '@subject', found none"),
    ("the body\nand more\n", 3, "subject", "expected a line '@subject' followed by the subject line, found no"),
    ("\n  \n@subject\nhello", 1, "body", "expected the email's text before '@subject', found no text"),
    ("body\n@subject\nhi\n@subject\nhi", 4, "subject", "expected one '@subject' line, found a second one"),
    (b"body\n@subject\nbad \xff byte", 3, "subject", "expected UTF-8 text, found an invalid byte at column 5"),
    (b"caf\xe9\n@subject\nhi", 1, "body", "expected UTF-8 text, found an invalid byte at column 4"),
])
def test_a_malformed_file_names_its_file_line_section_and_what_was_found(text, line, field, message, tmp_path):
    root = write_release(tmp_path / "aeslc", {"train": {"good": TRAIN_FILE, "x_bad": text}})
    bad = root / "enron_subject_line" / "train" / "x_bad.subject"
    with pytest.raises(RecordError, match=rf"^{bad}:{line}: field '{field}': {message}"):
        read_corpus_split(root, "train", "aeslc")
    examples, errors = read_text_split(DataConfig(path=str(root), format="aeslc", on_error="skip"), "train")
    assert [e.id for e in examples] == ["good"] and [(e.record_id, e.line) for e in errors] == [("x_bad", line)]


def test_a_missing_or_empty_split_folder_is_one_line_naming_it(release):
    (release / "enron_subject_line" / "empty").mkdir()
    with pytest.raises(UsageError, match=r"AESLC split 'nope' not found: expected the folder .*_line/nope"):
        read_text_split(DataConfig(path=str(release), format="aeslc"), "nope")
    with pytest.raises(FileNotFoundError, match=r"expected \.subject files in .*enron_subject_line/empty, found none"):
        read_corpus_split(release, "empty", "aeslc")


def test_summarize_refuses_the_format_in_one_line(release):
    with pytest.raises(InputError, match=r"input_format=aeslc: the AESLC release .* is read as a corpus by hiersum "
                                         r"train and hiersum evaluate \(data=aeslc\), not as an input"):
        read_records(release / "enron_subject_line" / "dev", input_format="aeslc")


@pytest.mark.skipif(not AESLC.is_dir(), reason="shared AESLC data not present")
def test_the_shared_release_reads_dev_with_four_references_and_train_with_one():
    spec = format_spec("aeslc")
    dev = list(spec.split_records(AESLC, "validation"))
    assert len(dev) == 1960 and all(isinstance(e, Example) and len(e.references) == 4 for e in dev)
    assert [e.id for e in dev[:2]] == ["allen-p_inbox_29", "allen-p_inbox_7"]  # sorted by file name
    train = list(spec.split_records(AESLC, "train"))
    assert len(train) == 14436 and all(isinstance(e, Example) and len(e.references) == 1 for e in train)
