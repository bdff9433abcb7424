"""``hiersum-summarize``: formats, outputs, record errors, usage errors, resuming after ``kill -9``.

In process through ``summarize(cfg)``; the usage errors (exit status 2 and stderr) through the script's ``main``
in process (:func:`tests.helpers.cli.run_in_process`); subprocesses where the process matters: exit status 3
of ``scripts/summarize.py`` with its stderr, the killed run, the imports at start."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hiersum.commands.summarize import summarize
from hiersum.errors import UsageError
from tests.helpers.cli import BIN, alias, assert_usage_error, cli_env, run_in_process, run_main
from tests.helpers.paths import PROJECT_ROOT, SAMPLE_DIR

PROG = alias("summarize")

pytestmark = pytest.mark.slow


def sample_records(n: int) -> list[dict]:
    with open(SAMPLE_DIR / "test.jsonl", encoding="utf-8") as handle:
        return [json.loads(next(handle)) for _ in range(n)]


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def base_args(checkpoint: Path, source, output, *extra: str) -> list[str]:
    return [f"checkpoint={checkpoint}", f"input={source}", f"output={output}", *extra]


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture()
def run_summarize(tiny_cfg, tmp_path):
    """``run_summarize(*args)``: ``summarize(cfg)`` of ``hiersum-summarize *args``, in process."""
    return lambda *args: summarize(tiny_cfg(*args, name="summarize", output_dir=tmp_path / "hydra"))


def test_native_input_writes_every_field_and_n_best(run_summarize, checkpoint, tmp_path, capsys):
    records = sample_records(3)
    source = write_lines(tmp_path / "in.jsonl", [json.dumps(r) for r in records])
    output = tmp_path / "out.jsonl"
    result = run_summarize(*base_args(
        checkpoint, source, output, "decode.beam_size=3", "decode.n_best=2", "decode.max_length=10",
        "max_paragraphs=2", "precision=bf16",
    ))
    assert (result.written, result.already_done, result.errors) == (3, 0, 0)
    assert capsys.readouterr().out == ""
    written = read_jsonl(output)
    assert [r["id"] for r in written] == [r["id"] for r in records]
    for record in written:
        assert set(record) == {"id", "summary", "score", "n_paragraphs_kept", "n_paragraphs_dropped", "n_best"}
        assert record["n_paragraphs_kept"] == 2 and record["n_paragraphs_dropped"] > 0
        assert 1 <= len(record["n_best"]) <= 2 and record["n_best"][0]["summary"] == record["summary"]
        scores = [h["score"] for h in record["n_best"]]
        assert scores == sorted(scores, reverse=True) and scores[0] == record["score"]
    assert not (tmp_path / "out.errors.jsonl").exists()


def test_attention_adds_the_most_attended_paragraphs_with_their_provenance(run_summarize, checkpoint, tmp_path):
    records = sample_records(2)
    source = write_lines(tmp_path / "in.jsonl", [json.dumps(r) for r in records])
    output = tmp_path / "out.jsonl"
    run_summarize(*base_args(checkpoint, source, output, "decode=greedy", "decode.max_length=5", "attention=true",
                             "attention_top_k=2"))
    for record, written in zip(records, read_jsonl(output), strict=True):
        top = written["top_paragraphs"]
        assert len(top) == 2 and top[0]["weight"] >= top[1]["weight"] > 0
        for entry in top:
            if entry["document"] == -1:  # the title paragraph
                assert entry["paragraph"] == 0
            else:
                assert 0 <= entry["paragraph"] < len(record["documents"][entry["document"]].split("\n\n"))


def test_stdin_to_stdout(run_summarize, checkpoint, monkeypatch, capsys):
    records = sample_records(3)
    stdin = "".join(json.dumps(r) + "\n" for r in records).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    run_summarize(*base_args(checkpoint, "-", "-", "decode=greedy"))
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in lines] == [r["id"] for r in records]
    assert all(isinstance(r["summary"], str) and "n_best" not in r for r in lines)


def test_text_folder_one_example_per_file_and_an_empty_file_is_refused(run_summarize, checkpoint, tmp_path):
    folder = tmp_path / "texts"
    folder.mkdir()
    for index, record in enumerate(sample_records(2)):
        (folder / f"doc{index}.txt").write_text("\n\n".join(record["documents"]), encoding="utf-8")
    (folder / "empty.txt").write_text("  \n", encoding="utf-8")
    (folder / "ignored.md").write_text("not a .txt file", encoding="utf-8")
    output = tmp_path / "out.jsonl"
    result = run_summarize(*base_args(checkpoint, folder, output, "decode=greedy"))
    assert (result.written, result.errors) == (2, 1)
    assert [r["id"] for r in read_jsonl(output)] == ["doc0", "doc1"]
    errors = read_jsonl(tmp_path / "out.errors.jsonl")
    assert [(Path(e["file"]).name, e["id"]) for e in errors] == [("empty.txt", "empty")]
    assert "empty document" in errors[0]["reason"]


def test_multinews_input_is_detected_and_its_bad_records_reported(run_summarize, checkpoint, tmp_path, capsys):
    lines = []
    for record in sample_records(3):
        articles = [document.replace("\n\n", "\n \n") for document in record["documents"]]
        lines.append(json.dumps({"document": " ||||| ".join(articles) + " ||||| ", "summary": "– x"}))
    lines.insert(1, json.dumps({"document": 5, "summary": "– y"}))
    lines.insert(3, json.dumps({"document": " ||||| ", "summary": "– z"}))
    source = write_lines(tmp_path / "multinews.jsonl", lines)
    output = tmp_path / "out.jsonl"
    result = run_summarize(*base_args(checkpoint, source, output, "decode=greedy"))
    assert (result.written, result.errors) == (3, 2)
    assert [r["id"] for r in read_jsonl(output)] == ["multinews-1", "multinews-3", "multinews-5"]
    errors = read_jsonl(tmp_path / "out.errors.jsonl")
    assert [(e["line"], e["field"]) for e in errors] == [(2, "document"), (4, "document")]
    assert f"{source}:2: field 'document': expected a string, found int" in capsys.readouterr().err


@pytest.mark.parametrize("program", ["hiersum-summarize", "scripts/summarize.py"])
def test_a_malformed_line_is_reported_and_the_rest_summarized(program, run_summarize, checkpoint, tiny_corpus,
                                                              tmp_path, capsys):
    """In process (the command) and through the wrapper script (a subprocess: exit status 3)."""
    lines = (tiny_corpus / "test.jsonl").read_text().splitlines()[:4]
    lines.insert(2, '{"id": "broken", "documents": 7}')
    source = write_lines(tmp_path / "in.jsonl", lines)
    output = tmp_path / "out.jsonl"
    args = base_args(checkpoint, source, output)
    if program.endswith(".py"):
        result = subprocess.run([sys.executable, str(PROJECT_ROOT / program), *args,
                                 f"hydra.run.dir={tmp_path / 'hydra'}"], cwd=PROJECT_ROOT, capture_output=True,
                                text=True, timeout=600, env=cli_env())
        assert result.returncode == 3, result.stderr
        stderr = result.stderr
    else:
        assert run_summarize(*args).errors == 1
        stderr = capsys.readouterr().err
    assert f"{source}:3: field 'documents'" in stderr
    records = read_jsonl(output)
    assert [r["id"] for r in records] == ["test-000001", "test-000002", "test-000003", "test-000004"]
    assert all(isinstance(r["summary"], str) for r in records)
    errors = read_jsonl(tmp_path / "out.errors.jsonl")
    assert [(e["line"], e["id"], e["field"]) for e in errors] == [(3, "broken", "documents")]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"checkpoint": "missing.ckpt"}, "checkpoint not found"),
        ({"input": "no/such/input.jsonl"}, "input not found"),
        ({"input": None}, "missing input="),
    ],
)
def test_usage_errors(run_summarize, checkpoint, tmp_path, change, message):
    source = write_lines(tmp_path / "in.jsonl", [json.dumps(sample_records(1)[0])])
    values = {"checkpoint": checkpoint, "input": source, "output": tmp_path / "out.jsonl", **change}
    with pytest.raises(UsageError, match=message):
        run_summarize(*(f"{key}={value}" for key, value in values.items() if value is not None))
    assert not (tmp_path / "out.jsonl").exists()


def test_a_usage_error_exits_2_with_one_line(tmp_path, monkeypatch, capsys):
    source = write_lines(tmp_path / "in.jsonl", [json.dumps(sample_records(1)[0])])
    result = run_in_process(PROG, [*base_args(tmp_path / "missing.ckpt", source, tmp_path / "out.jsonl"),
                                   f"hydra.run.dir={tmp_path / 'hydra'}"], monkeypatch, capsys)
    assert_usage_error(result.returncode, result.stderr, f"{PROG}: error:", "checkpoint not found")


def test_an_option_hydra_refuses_exits_2_with_one_line(tmp_path, monkeypatch, capsys):
    result = run_in_process(PROG, [*base_args("m.ckpt", "in.jsonl", tmp_path / "out.jsonl"), "decode.beam_sise=5",
                                   f"hydra.run.dir={tmp_path / 'hydra'}"], monkeypatch, capsys)
    assert_usage_error(result.returncode, result.stderr, f"{PROG}: error:", "beam_sise")


@pytest.mark.parametrize("option", ["decode.beam_size=five", "no_such_option=1", "precision=64bit", "selection=best",
                                    "paragraphs=words"])
def test_options_hydra_refuses_exit_2_in_one_line(option, tmp_path, monkeypatch, capsys):
    args = [*base_args("m.ckpt", "in.jsonl", tmp_path / "out.jsonl"), option, f"hydra.run.dir={tmp_path / 'hydra'}"]
    code, stderr = run_main("summarize", args, monkeypatch, capsys)
    assert_usage_error(code, stderr, f"{PROG}: error:", option.split("=")[0].split(".")[-1])
    assert not (tmp_path / "out.jsonl").exists() and not (tmp_path / "hydra").exists()


def test_a_precision_the_device_cannot_run_exits_2_in_one_line(tmp_path, monkeypatch, capsys):
    """``precision`` is ``trainer.precision``'s type; one the CPU cannot decode in (``16-true``: float16 weights) is
    refused in one line naming the device it needs, before the checkpoint is read."""
    result = run_in_process(PROG, [*base_args("m.ckpt", "in.jsonl", tmp_path / "out.jsonl"), "precision=16-true",
                                   "device=cpu", f"hydra.run.dir={tmp_path / 'hydra'}"], monkeypatch, capsys)
    assert_usage_error(result.returncode, result.stderr, "precision=16-true needs device=cuda")
    assert not (tmp_path / "out.jsonl").exists()


def test_killed_run_resumes_with_every_id_exactly_once_in_input_order(run_summarize, checkpoint, tmp_path, capsys):
    records = sample_records(60)
    lines = [json.dumps(r) for r in records]
    lines.insert(10, json.dumps(records[3]))  # a repeated id: refused, the first one is kept
    lines.insert(20, "{not json")
    source = write_lines(tmp_path / "in.jsonl", lines)
    output = tmp_path / "out.jsonl"
    # Long forced outputs in small windows, so the first lines appear well before the end.
    args = base_args(checkpoint, source, output, "decode.beam_size=3", "decode.min_length=150",
                     "decode.max_length=150", "decode.batch_size=2", "sort_window=4")
    process = subprocess.Popen([str(BIN / PROG), *args, f"hydra.run.dir={tmp_path / 'hydra'}"], cwd=PROJECT_ROOT,
                               env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while not (output.exists() and output.read_bytes().count(b"\n") >= 1):
            assert process.poll() is None and time.monotonic() < deadline, "no output before the process ended"
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == -signal.SIGKILL
    n_before = len(read_jsonl(output))
    assert 1 <= n_before < len(records)
    with open(output, "ab") as handle:  # what a kill in the middle of a write could leave
        handle.write(b'{"id": "test-0000')
    # the rest in process, with the same options (the output's provenance requires them)
    result = run_summarize(*args)
    assert (result.written, result.already_done, result.errors) == (len(records) - n_before, n_before, 2)
    ids = [r["id"] for r in read_jsonl(output)]
    assert ids == [r["id"] for r in records]
    assert f"({n_before} already there)" in capsys.readouterr().err
    errors = read_jsonl(tmp_path / "out.errors.jsonl")
    assert [(e["line"], e["field"], e["id"]) for e in errors] == [(11, "id", records[3]["id"]), (21, None, None)]
    again = run_summarize(*args)  # nothing left to do
    assert (again.written, again.errors) == (0, 2) and "wrote 0 summaries" in capsys.readouterr().err
    assert [r["id"] for r in read_jsonl(output)] == ids


def test_resume_false_starts_afresh(run_summarize, checkpoint, tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [json.dumps(r) for r in sample_records(2)])
    output = tmp_path / "out.jsonl"
    output.write_text('{"id": "old"}\n', encoding="utf-8")
    run_summarize(*base_args(checkpoint, source, output, "decode=greedy", "resume=false"))
    assert [r["id"] for r in read_jsonl(output)] == [r["id"] for r in sample_records(2)]


def test_summarize_imports_neither_lightning_nor_torchmetrics_and_evaluation_no_lightning():
    """The script users run most often starts without Lightning's import cost (~6 s here), and
    scoring a split (``hiersum-evaluate``) does not need Lightning either."""
    probe = (
        "import sys\n"
        "names = ('pytorch_lightning', 'lightning_fabric', 'torchmetrics')\n"
        "heavy = lambda: sorted(m for m in names if m in sys.modules)\n"
        "import hiersum.commands.summarize\n"
        "print(heavy())\n"
        "import hiersum.commands.evaluate\n"
        "print(heavy())\n"
    )
    result = subprocess.run([str(BIN / "python"), "-c", probe], capture_output=True, text=True, check=True,
                            env=cli_env(), timeout=300)
    assert result.stdout.split("\n")[:2] == ["[]", "['torchmetrics']"], result.stdout
