"""A bad checkpoint given to a command (``summarize checkpoint=``, ``evaluate checkpoint=``, ``train ckpt_path=``,
``rank ranker=``): exit status 2, one line on stderr, no traceback, no advice to load with
``weights_only=False``, the file left as it was; with ``HYDRA_FULL_ERROR=1``, the full traceback.

Each command runs in process (:func:`tests.helpers.cli.run_in_process`: the console script's ``main``, its exit
status and stderr): what is refused is the checkpoint, not the process."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.checkpoints import WEIGHTS_ONLY_ADVICE, digest, save_ranker_checkpoint, truncated_copy
from tests.helpers.cli import assert_usage_error, run_in_process, train_args

pytestmark = pytest.mark.slow


def assert_refused(result, checkpoint: Path, before: str | None, prog: str, *expected: str) -> None:
    assert_usage_error(result.returncode, result.stderr, f"{prog}: error:", str(checkpoint), *expected)
    assert WEIGHTS_ONLY_ADVICE not in result.stderr
    assert (digest(checkpoint) if checkpoint.is_file() else None) == before


def test_summarize_with_random_bytes(tmp_path, monkeypatch, capsys):
    checkpoint = tmp_path / "random.ckpt"
    checkpoint.write_bytes(bytes(range(7, 250)) * 16)
    before = digest(checkpoint)
    args = [f"checkpoint={checkpoint}", "input=-", f"output={tmp_path / 'out.jsonl'}",
            f"hydra.run.dir={tmp_path / 'h'}"]
    result = run_in_process("hiersum-summarize", args, monkeypatch, capsys, stdin="")
    assert_refused(result, checkpoint, before, "hiersum-summarize", "is not a torch file", "expected a hiersum")
    full = run_in_process("hiersum-summarize", args, monkeypatch, capsys, stdin="", env={"HYDRA_FULL_ERROR": "1"})
    assert full.returncode != 0 and "Traceback" in full.stderr and "CheckpointError" in full.stderr
    assert "The above exception was the direct cause" in full.stderr  # torch's own error, chained
    assert digest(checkpoint) == before


def test_evaluate_with_a_directory(tmp_path, tiny_corpus, monkeypatch, capsys):
    folder = tmp_path / "run"
    folder.mkdir()
    result = run_in_process("hiersum-evaluate", [f"checkpoint={folder}", f"data.path={tiny_corpus}",
                                                 f"hydra.run.dir={tmp_path / 'h'}"], monkeypatch, capsys)
    assert_refused(result, folder, None, "hiersum-evaluate", "is a directory; expected a hiersum checkpoint")


def test_train_resuming_from_a_text_file(tmp_path, tiny_corpus, monkeypatch, capsys):
    checkpoint = tmp_path / "notes.ckpt"
    checkpoint.write_text("epoch 3 was the best\n")
    before = digest(checkpoint)
    result = run_in_process("hiersum-train", train_args(tiny_corpus, tmp_path / "run", f"ckpt_path={checkpoint}"),
                            monkeypatch, capsys)
    assert_refused(result, checkpoint, before, "hiersum-train", "is a text file",
                   "expected a training checkpoint of hiersum train to resume from")
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_rank_with_a_truncated_ranker(tmp_path, monkeypatch, capsys):
    checkpoint = truncated_copy(save_ranker_checkpoint(tmp_path / "ranker.pt"), tmp_path / "cut.pt")
    before = digest(checkpoint)
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "documents": ["one paragraph"]}\n')
    result = run_in_process("hiersum-rank", [f"ranker={checkpoint}", f"input={source}",
                                             f"output={tmp_path / 'o.jsonl'}", f"hydra.run.dir={tmp_path / 'h'}"],
                            monkeypatch, capsys)
    assert_refused(result, checkpoint, before, "hiersum-rank", "is a truncated or damaged torch file",
                   "expected a ranker checkpoint of hiersum train-ranker")
