import json

import torch

from hiersum.checkpoints import load_network
from hiersum.checkpoints.contents import effective_decode_config
from hiersum.cli.overrides import given_fields
from hiersum.commands.evaluate import effective_data_config, evaluate
from hiersum.config import DataConfig, DecodeConfig
from tests.helpers.config import compose_config


def test_evaluation_keeps_the_checkpoints_selection_unless_overridden():
    trained = DataConfig(path="train-data", max_paragraphs=24, max_paragraph_tokens=80, limit_eval_examples=3)
    given = DataConfig(path="eval-data", max_paragraphs=40, batch_tokens=999)
    kept = effective_data_config(trained, given, {"path"})
    assert (kept.path, kept.max_paragraphs, kept.max_paragraph_tokens) == ("eval-data", 24, 80)
    assert kept.batch_tokens == 999 and kept.limit_eval_examples is None
    overridden = effective_data_config(trained, given, {"max_paragraphs"})
    assert overridden.max_paragraphs == 40 and overridden.max_paragraph_tokens == 80
    assert effective_data_config(None, given, []) is given


def test_evaluation_handles_bad_records_as_the_checkpoints_corpus_did_unless_given():
    """A recipe whose data skips bad records (cnndm's repeated ids) skips them when its checkpoint scores a test
    split; ``data.on_error=`` on the command line still decides."""
    trained = DataConfig(path="train-data", format="cnndm", on_error="skip")
    assert DataConfig(path="test-only").on_error != "skip"  # the guard: the default differs
    assert effective_data_config(trained, DataConfig(path="test-only"), {"path"}).on_error == "skip"
    given = effective_data_config(trained, DataConfig(path="test-only", on_error="fail"), {"path", "on_error"})
    assert given.on_error == "fail"


def test_evaluation_keeps_the_checkpoints_ranker_unless_the_selection_is_overridden():
    trained = DataConfig(path="train-data", selection="ranker", ranker="/runs/ranker-best.pt")
    kept = effective_data_config(trained, DataConfig(path="eval-data"), [])
    assert (kept.selection, kept.ranker) == ("ranker", "/runs/ranker-best.pt")
    other = effective_data_config(trained, DataConfig(path="eval-data", ranker="/new/ranker.pt"),
                                  {"ranker"})
    assert (other.selection, other.ranker) == ("ranker", "/new/ranker.pt")
    first = effective_data_config(trained, DataConfig(path="eval-data"), {"selection"})
    assert first.selection == "first"


def test_evaluation_reads_the_checkpoints_data_format_unless_given():
    trained = DataConfig(path="train-data", format="cnndm", max_paragraph_tokens=512)
    kept = effective_data_config(trained, DataConfig(path="test-only"), {"path"})
    assert (kept.path, kept.format, kept.max_paragraph_tokens) == ("test-only", "cnndm", 512)
    given = effective_data_config(trained, DataConfig(path="test-only", format="jsonl"), {"path", "format"})
    assert given.format == "jsonl"


def test_evaluation_decodes_with_the_training_runs_search_settings_unless_given():
    trained = DecodeConfig(beam_size=2, min_length=35, max_length=100, no_repeat_ngram_size=3)
    given = DecodeConfig(beam_size=5)
    kept = effective_decode_config(trained, given, [])
    assert (kept.beam_size, kept.min_length, kept.max_length, kept.no_repeat_ngram_size) == (2, 35, 100, 3)
    overridden = effective_decode_config(trained, given, {"beam_size"})
    assert (overridden.beam_size, overridden.max_length) == (5, 100)
    assert effective_decode_config(None, given, {"beam_size"}) is given


def test_a_checkpoint_records_its_runs_search_settings_and_evaluate_decodes_with_them(checkpoint, tiny_corpus,
                                                                                        tmp_path):
    saved = torch.load(checkpoint, weights_only=True, map_location="cpu")
    assert DecodeConfig(**saved["hyper_parameters"]["decode"]) == load_network(checkpoint).decode_config
    saved["hyper_parameters"]["decode"].update(min_length=1, max_length=2)  # as if its experiment chose them
    short = tmp_path / "short.ckpt"
    torch.save(saved, short)
    options = [f"checkpoint={short}", f"data.path={tiny_corpus}", "split=test", "bootstrap.samples=0",
               "baselines=[lead]", "data.limit_eval_examples=3"]

    def decoded(name: str, decode_given: set[str], *extra: str) -> tuple[dict, list[str]]:
        metrics = evaluate(compose_config("evaluate", [*options, *extra], tmp_path / name), {"path"}, decode_given)
        lines = (tmp_path / name / "predictions.jsonl").read_text().splitlines()
        return metrics["decode"], [json.loads(line)["summary"] for line in lines]

    recorded, short_summaries = decoded("recorded", set())
    assert (recorded["min_length"], recorded["max_length"]) == (1, 2)
    given, long_summaries = decoded("given", {"min_length", "max_length"}, "decode.min_length=10",
                                    "decode.max_length=12")
    assert (given["min_length"], given["max_length"]) == (10, 12)
    assert all(len(long) > len(short) for long, short in zip(long_summaries, short_summaries, strict=True))


def test_the_command_line_gives_decode_fields_and_a_decode_preset_gives_them_all():
    overrides = ["checkpoint=x.ckpt", "decode.beam_size=2", "+decode.alpha=0.9", "data.max_paragraphs=3"]
    assert given_fields(overrides, "decode", preset={"all"}) == {"beam_size", "alpha"}
    assert given_fields(["decode=greedy"], "decode", preset={"all"}) == {"all"}
