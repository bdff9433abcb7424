"""``hiersum export`` of the session's tiny trained run: summaries and evaluations from the exported directory are
byte-identical to those from the checkpoint it came from (in process), and the same through the commands' command
lines (a ``hiersum export`` process, then ``hiersum summarize`` through the script's ``main`` in process, slow),
where a damaged export is one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from hiersum.commands.evaluate import evaluate
from hiersum.commands.export import ExportResult, export, exported_checkpoint
from hiersum.commands.summarize import summarize
from tests.helpers.cli import assert_usage_error, run_cli, run_in_process
from tests.helpers.config import compose_config

RECORDS = 6
DECODE = ["decode.beam_size=2", "decode.max_length=12", "decode.min_length=0"]


@pytest.fixture(scope="module")
def exported(trained_run: Path, tmp_path_factory: pytest.TempPathFactory) -> ExportResult:
    output = tmp_path_factory.mktemp("exported") / "model"
    return export(compose_config("export", [f"checkpoint={trained_run}", f"output={output}"], output.parent / "h"))


@pytest.fixture(scope="module")
def records(tiny_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    lines = (tiny_corpus / "test.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:RECORDS]
    path = tmp_path_factory.mktemp("records") / "records.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def summarized(checkpoint: Path, records: Path, output: Path) -> bytes:
    cfg = compose_config("summarize", [f"checkpoint={checkpoint}", f"input={records}", f"output={output}", *DECODE],
                         output.parent / "h")
    assert summarize(cfg).written == RECORDS
    return output.read_bytes()


def test_summaries_from_the_export_are_byte_identical_to_the_checkpoints(exported, records, tmp_path):
    from_checkpoint = summarized(exported.checkpoint, records, tmp_path / "ckpt" / "out.jsonl")
    from_directory = summarized(exported.directory, records, tmp_path / "dir" / "out.jsonl")
    assert from_directory == from_checkpoint and from_directory.count(b"\n") == RECORDS
    resumed = compose_config("summarize", [f"checkpoint={exported.directory}", f"input={records}",
                                           f"output={tmp_path / 'dir' / 'out.jsonl'}", *DECODE], tmp_path / "h")
    result = summarize(resumed)  # the directory's fingerprint is stable: the provenance matches, nothing to add
    assert (result.written, result.already_done) == (0, RECORDS)


@pytest.mark.slow  # an evaluate process
def test_evaluating_the_export_gives_the_checkpoints_predictions(exported, tiny_corpus, tmp_path):
    def predictions(checkpoint: Path, name: str) -> bytes:
        options = [f"checkpoint={checkpoint}", f"data.path={tiny_corpus}", "split=validation", "decode=greedy",
                   "decode.max_length=12", "baselines=[]", "bootstrap.samples=10"]
        evaluate(compose_config("evaluate", options, tmp_path / name), options)
        return (tmp_path / name / "predictions.jsonl").read_bytes()

    assert predictions(exported.directory, "dir") == predictions(exported.checkpoint, "ckpt")


@pytest.mark.slow
def test_the_console_scripts_export_and_summarize_the_same_bytes(trained_run, records, tmp_path, monkeypatch,
                                                                  capsys):
    directory = tmp_path / "model"
    run_cli("hiersum", ["export", f"checkpoint={trained_run}", f"output={directory}",
                        f"hydra.run.dir={tmp_path / 'h'}"])
    outputs = {}
    for name, checkpoint in (("dir", directory), ("ckpt", exported_checkpoint(trained_run)[0])):
        outputs[name] = tmp_path / f"{name}.jsonl"
        ran = run_in_process("hiersum", ["summarize", f"checkpoint={checkpoint}", f"input={records}",
                                         f"output={outputs[name]}", *DECODE, f"hydra.run.dir={tmp_path / 'h'}"],
                             monkeypatch, capsys)
        assert ran.returncode == 0, ran.stderr
    assert outputs["dir"].read_bytes() == outputs["ckpt"].read_bytes()
    (directory / "model.safetensors").write_bytes((directory / "model.safetensors").read_bytes()[:100])
    broken = run_in_process("hiersum", ["summarize", f"checkpoint={directory}", f"input={records}",
                                        f"output={tmp_path / 'broken.jsonl'}", f"hydra.run.dir={tmp_path / 'h'}"],
                            monkeypatch, capsys)
    assert_usage_error(broken.returncode, broken.stderr, f"{directory / 'model.safetensors'}: is not a readable "
                       "safetensors file", "expected a model directory of hiersum export")
