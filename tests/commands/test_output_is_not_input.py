"""No command writes over one of its inputs: an output that is an input (the same path, a symlink or a hard
link to it) is refused with one line before anything is written, and the input is left byte for byte."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from hiersum.cli import average_checkpoints, import_hiersumm
from hiersum.commands.evaluate import evaluate
from hiersum.commands.export import export
from hiersum.commands.prepare import prepare
from hiersum.commands.rank import rank
from hiersum.commands.summarize import summarize
from hiersum.commands.train import train
from hiersum.errors import UsageError
from tests.helpers.cli import alias, assert_usage_error, run_cli
from tests.helpers.config import compose_config

PROG = alias("summarize")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture()
def records(tiny_corpus, tmp_path) -> Path:
    """Four native records, not newline-terminated at the end (a resume would cut the last as partial)."""
    path = tmp_path / "in.jsonl"
    path.write_text("".join((tiny_corpus / "test.jsonl").read_text().splitlines(keepends=True)[:4]).rstrip("\n"))
    return path


@pytest.fixture()
def fake_checkpoint(tmp_path) -> Path:
    """Not a checkpoint: the check comes before any checkpoint is read."""
    path = tmp_path / "model.ckpt"
    path.write_bytes(b"weights")
    return path


def link(kind: str, target: Path, name: Path) -> Path:
    if kind == "symlink":
        name.symlink_to(target)
    elif kind == "hard link":
        os.link(target, name)
    else:
        return target
    return name


@pytest.mark.parametrize("kind", ["same path", "symlink", "hard link"])
@pytest.mark.parametrize("resume", ["true", "false"])
def test_summarize_refuses_its_input_as_output(tiny_cfg, records, fake_checkpoint, tmp_path, kind, resume):
    before = digest(records)
    output = link(kind, records, tmp_path / "out.jsonl")
    cfg = tiny_cfg(f"checkpoint={fake_checkpoint}", f"input={records}", f"output={output}", f"resume={resume}",
                   name="summarize")
    with pytest.raises(UsageError, match=r"\(output\) is the same file as .*in\.jsonl \(input\)"):
        summarize(cfg)
    assert digest(records) == before and not (tmp_path / "out.errors.jsonl").exists()


def test_summarize_refuses_the_checkpoint_as_output_or_as_errors_file(tiny_cfg, records, fake_checkpoint, tmp_path):
    with pytest.raises(UsageError, match=r"\(output\) is the same file as .*model\.ckpt \(checkpoint\)"):
        summarize(tiny_cfg(f"checkpoint={fake_checkpoint}", f"input={records}", f"output={fake_checkpoint}",
                           name="summarize"))
    errors_file = tmp_path / "in.errors.jsonl"
    errors_file.write_text("keep\n")
    with pytest.raises(UsageError, match=r"\(the errors file of output\) is the same file as .*\(input\)"):
        summarize(tiny_cfg(f"checkpoint={fake_checkpoint}", f"input={errors_file}", f"output={records}",
                           name="summarize"))
    assert fake_checkpoint.read_bytes() == b"weights" and errors_file.read_text() == "keep\n"


def test_rank_refuses_its_input_as_output(records, tmp_path):
    before = digest(records)
    output = link("symlink", records, tmp_path / "ranked.jsonl")
    cfg = compose_config("rank", ["ranker=tfidf", f"input={records}", f"output={output}", "top_k=2"], tmp_path / "h")
    with pytest.raises(UsageError, match=r"\(output\) is the same file as .*\(input\)"):
        rank(cfg)
    assert digest(records) == before


def test_evaluate_refuses_predictions_its_report_would_replace(tiny_cfg, tiny_corpus, tmp_path):
    run_dir = tmp_path / "eval"
    run_dir.mkdir()
    predictions = run_dir / "predictions.jsonl"
    shutil.copy(tiny_corpus / "test.jsonl", predictions)
    before = digest(predictions)
    with pytest.raises(UsageError, match=r"predictions\.jsonl \(report file predictions\.jsonl\) is the same file"):
        evaluate(tiny_cfg(f"predictions={predictions}", "bootstrap.samples=0", name="evaluate", output_dir=run_dir))
    assert digest(predictions) == before and sorted(p.name for p in run_dir.iterdir()) == ["predictions.jsonl"]


def test_prepare_and_train_refuse_a_split_file_their_run_directory_would_replace(tiny_corpus, tiny_cfg, tmp_path):
    corpus, run_dir = tmp_path / "corpus", tmp_path / "run"
    shutil.copytree(tiny_corpus, corpus)
    run_dir.mkdir()
    os.link(corpus / "train.jsonl", run_dir / "data_errors.jsonl")  # removed by a run that skips no record
    os.link(corpus / "test.jsonl", run_dir / "predictions.jsonl")
    before = {path.name: digest(path) for path in corpus.iterdir()}
    cfg = compose_config("prepare", ["model=tiny", f"data.path={corpus}"], run_dir)
    with pytest.raises(UsageError, match=r"data_errors\.jsonl \(data_errors\.jsonl\) is the same file as .*train"):
        prepare(cfg)
    with pytest.raises(UsageError, match=r"\(report file (data_errors|predictions)\.jsonl\) is the same file"):
        train(tiny_cfg(f"data.path={corpus}", "debug=fast_dev_run", output_dir=run_dir))
    assert {path.name: digest(path) for path in corpus.iterdir()} == before
    assert not (run_dir / "checkpoints").exists()


def test_average_and_import_refuse_an_input_checkpoint_as_output(fake_checkpoint, tmp_path, capsys):
    other = tmp_path / "other.ckpt"
    other.write_bytes(b"more weights")
    for main, argv in [
        (average_checkpoints.main, [str(fake_checkpoint), str(other), "--output", str(other)]),
        (import_hiersumm.main, ["--checkpoint", str(fake_checkpoint), "--output", str(fake_checkpoint)]),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
        assert "is the same file as" in capsys.readouterr().err
    assert fake_checkpoint.read_bytes() == b"weights" and other.read_bytes() == b"more weights"


@pytest.mark.parametrize("kind", ["same path", "symlink", "hard link", "its folder"])
def test_export_refuses_an_output_that_holds_its_checkpoint(fake_checkpoint, tmp_path, kind):
    output = fake_checkpoint.parent if kind == "its folder" else link(kind, fake_checkpoint, tmp_path / "out")
    cfg = compose_config("export", [f"checkpoint={fake_checkpoint}", f"output={output}", "overwrite=true"],
                         tmp_path / "hydra")
    with pytest.raises(UsageError, match=rf"is the same file as {fake_checkpoint} \(checkpoint\)"):
        export(cfg)
    assert fake_checkpoint.read_bytes() == b"weights"


@pytest.mark.slow
def test_the_command_exits_2_with_one_line_and_the_input_intact(records, fake_checkpoint, tmp_path):
    before = digest(records)
    result = run_cli(PROG, [f"checkpoint={fake_checkpoint}", f"input={records}", f"output={records}",
                            f"hydra.run.dir={tmp_path / 'hydra'}"], check=False)
    assert_usage_error(result.returncode, result.stderr, f"{PROG}: error:", "is the same file as", "(input)")
    assert digest(records) == before
