"""Every front end decodes with the search settings a checkpoint's training run recorded (an experiment's beam, length
bounds, trigram blocking), except the fields its caller gives: ``hiersum summarize``, ``hiersum serve`` and the
Python call, as ``hiersum evaluate`` does (tests/commands/test_evaluate.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from hiersum.commands.summarize import summarize
from hiersum.config import DecodeConfig, ServeConfig
from hiersum.inference import load_summarizer
from hiersum.serving.server import checked_serve_config
from tests.helpers.cli import run_in_process

TEXTS = ["alpha beta gamma.\n\nzeta epsilon delta.", "gamma delta beta.\n\nbeta alpha zeta epsilon."]
RECORDED = {"min_length": 1, "max_length": 2}  # as if the checkpoint's experiment chose them
GIVEN = {"min_length": 6, "max_length": 8}


@pytest.fixture(scope="module")
def short_checkpoint(checkpoint, tmp_path_factory) -> Path:
    """The session's trained tiny checkpoint, edited as if its training run had recorded :data:`RECORDED` among
    its search settings."""
    saved = torch.load(checkpoint, weights_only=True, map_location="cpu")
    saved["hyper_parameters"]["decode"].update(RECORDED)
    path = tmp_path_factory.mktemp("run_decode") / "short.ckpt"
    torch.save(saved, path)
    return path


def python_summaries(checkpoint: Path, **decode_options) -> list[str]:
    return [line["summary"] for line in load_summarizer(checkpoint).summarize(TEXTS, **decode_options)]


def test_the_python_call_decodes_with_the_recorded_settings_unless_given(short_checkpoint):
    assert load_summarizer(short_checkpoint).decode_config.max_length == 2
    recorded = python_summaries(short_checkpoint)
    assert recorded == python_summaries(short_checkpoint, **RECORDED)
    given = python_summaries(short_checkpoint, **GIVEN)
    assert all(len(long) > len(short) for long, short in zip(given, recorded, strict=True))


def write_input(path: Path) -> Path:
    path.write_text("".join(json.dumps({"id": str(i), "documents": [text]}) + "\n" for i, text in enumerate(TEXTS)),
                    encoding="utf-8")
    return path


def summaries(output: Path) -> list[str]:
    return [json.loads(line)["summary"] for line in output.read_text(encoding="utf-8").splitlines()]


def test_summarize_takes_the_recorded_settings_but_the_fields_given(short_checkpoint, tiny_cfg, tmp_path):
    source = write_input(tmp_path / "in.jsonl")
    given_overrides = [f"decode.{name}={value}" for name, value in GIVEN.items()]

    def run(name: str, decode_given: set[str] | None, *overrides: str) -> list[str]:
        output = tmp_path / f"{name}.jsonl"
        summarize(tiny_cfg(f"checkpoint={short_checkpoint}", f"input={source}", f"output={output}", *overrides,
                           name="summarize", output_dir=tmp_path / name), decode_given)
        provenance = json.loads((tmp_path / f"{name}.provenance.json").read_text(encoding="utf-8"))
        expected = RECORDED if name == "recorded" else GIVEN
        assert provenance["options"]["decode"]["max_length"] == expected["max_length"]
        return summaries(output)

    assert run("recorded", set()) == python_summaries(short_checkpoint)
    assert run("given", set(GIVEN), *given_overrides) == python_summaries(short_checkpoint, **GIVEN)
    assert run("whole", None, *given_overrides) != python_summaries(short_checkpoint)  # a typed config: cfg.decode


@pytest.mark.slow
def test_the_summarize_command_reads_which_fields_its_command_line_gave(short_checkpoint, tmp_path, monkeypatch,
                                                                        capsys):
    """``hiersum-summarize``'s ``main`` in process, on its command line."""
    source = write_input(tmp_path / "in.jsonl")
    recorded, given = tmp_path / "recorded.jsonl", tmp_path / "given.jsonl"
    for output, options in ((recorded, []), (given, [f"decode.{name}={value}" for name, value in GIVEN.items()])):
        ran = run_in_process("hiersum-summarize", [f"checkpoint={short_checkpoint}", f"input={source}",
                                                   f"output={output}", *options, f"hydra.run.dir={tmp_path / 'h'}"],
                             monkeypatch, capsys)
        assert ran.returncode == 0, ran.stderr  # run_cli's check
    assert summaries(recorded) == python_summaries(short_checkpoint)
    assert summaries(given) == python_summaries(short_checkpoint, **GIVEN)


def test_serve_defaults_requests_to_the_recorded_settings_but_the_fields_given(short_checkpoint):
    cfg = ServeConfig(checkpoint=str(short_checkpoint))
    recorded = checked_serve_config(cfg, set()).decode
    assert recorded == load_summarizer(short_checkpoint).decode_config and recorded.max_length == 2
    given = checked_serve_config(cfg, {"max_length"}).decode
    assert given == replace(recorded, max_length=cfg.decode.max_length)
    assert checked_serve_config(cfg) == cfg


def test_given_lengths_are_checked_against_the_settings_decoded_with(checkpoint, tmp_path, monkeypatch, capsys):
    """``decode.min_length=90`` on the command line is past the default max_length (80) but within the 100 the
    checkpoint's run recorded: it decodes; 110 is past the recorded one too: refused in one line."""
    saved = torch.load(checkpoint, weights_only=True, map_location="cpu")
    saved["hyper_parameters"]["decode"].update({"min_length": 1, "max_length": 100, "beam_size": 1})
    long_checkpoint = tmp_path / "long.ckpt"
    torch.save(saved, long_checkpoint)
    source = write_input(tmp_path / "in.jsonl")

    def run(min_length: int, output: Path):
        return run_in_process("hiersum-summarize", [f"checkpoint={long_checkpoint}", f"input={source}",
                                                    f"output={output}", f"decode.min_length={min_length}",
                                                    f"hydra.run.dir={tmp_path / 'h'}"], monkeypatch, capsys)

    ran = run(90, tmp_path / "within.jsonl")
    assert ran.returncode == 0, ran.stderr
    provenance = json.loads((tmp_path / "within.provenance.json").read_text(encoding="utf-8"))
    assert (provenance["options"]["decode"]["min_length"], provenance["options"]["decode"]["max_length"]) == (90, 100)
    ran = run(110, tmp_path / "past.jsonl")
    assert ran.returncode == 2 and "decode.max_length=100 must be >= decode.min_length=110" in ran.stderr
    with pytest.raises(ValueError, match="decode.max_length=80 must be >= decode.min_length=90"):
        DecodeConfig(min_length=90).check_lengths()
