"""scripts/bench_quality.py: the hierarchical recipe, the flat encoder and BART (Seq2SeqTrainer) each trained for the
same CPU budget and scored on the same validation articles; its rows on a tiny CNN/DailyMail-like corpus (not the
figures: a few seconds of training say nothing of quality), and the pieces BART's side is built from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from hiersum.data.batching import FlatLayout
from hiersum.data.schema import IGNORE_INDEX, EncodedExample
from hiersum.data.tokenizer import train_tokenizer
from tests.commands.test_missing_splits import cnndm_rows
from tests.data.test_datasets_corpora import write_corpus
from tests.helpers.config import tiny_model_config
from tests.helpers.scripts import load_script

TINY_RECIPE = ["tokenizer.vocab_size=300", "data.max_paragraphs=4", "data.max_paragraph_tokens=24",
               "data.max_target_tokens=32", "data.max_batch_size=8", "decode.beam_size=2", "decode.min_length=0",
               "decode.max_length=12", "model.flat_max_tokens=96", "model.d_model=16", "model.heads=2",
               "model.ff_size=32", "model.inter_heads=2", "model.decoder_layers=1"]
"""``--override``s shrinking the recipe (``experiment=cnndm_cpu``) for every system: the models of ``model=tiny``'s
width, 4 paragraphs of 24 tokens, 12-token summaries."""


@pytest.mark.parametrize(("steps", "seen"), [(0, 0), (3, 24), (6, 48), (7, 50), (8, 58), (14, 100)])
def test_articles_seen_counts_each_epoch_whole_with_its_short_last_batch(steps: int, seen: int):
    # 50 articles in batches of 8: 6 full batches and one of 2 an epoch (7 steps)
    assert load_script("bench_quality").articles_seen(steps, 50, 8) == seen


def test_bart_reads_the_flat_batch_hiersum_trains_on():
    bench = load_script("bench_quality")
    tokenizer = train_tokenizer(["the cat sat on the mat", "a dog ran in the park"] * 20, vocab_size=80)
    special = tokenizer.special
    examples = [EncodedExample(id="a", paragraphs=[[7, 8, 9], [10, 11]], target=[12, 13, 14], references=["x"],
                               provenance=[(0, 0), (0, 1)]),
                EncodedExample(id="b", paragraphs=[[7]], target=[15], references=["y"], provenance=[(0, 0)])]
    layout = FlatLayout(max_tokens=4, separator_id=tokenizer.paragraph_separator_id)
    batch = bench.bart_batch(examples, tokenizer=tokenizer, layout=layout)
    sep = layout.separator_id
    assert batch["input_ids"].tolist() == [[7, 8, 9, sep, special.eos], [7, special.eos, special.pad, special.pad,
                                                                        special.pad]]
    assert batch["attention_mask"].tolist() == [[True] * 5, [True, True, False, False, False]]
    assert batch["decoder_input_ids"].tolist() == [[special.bos, 12, 13, 14], [special.bos, 15, special.pad,
                                                                              special.pad]]
    assert batch["labels"].tolist() == [[12, 13, 14, special.eos], [15, special.eos, IGNORE_INDEX, IGNORE_INDEX]]


def test_bart_takes_the_recipes_sizes_and_the_tokenizers_ids():
    bench = load_script("bench_quality")
    tokenizer = train_tokenizer(["the cat sat on the mat"] * 20, vocab_size=60)
    model = tiny_model_config(encoder_layers=3, decoder_layers=2, ff_size=48)
    config = bench.bart_config(model, tokenizer, 128)
    assert (config.d_model, config.encoder_layers, config.decoder_layers) == (16, 3, 2)
    assert (config.encoder_attention_heads, config.decoder_attention_heads) == (2, 2)
    assert (config.encoder_ffn_dim, config.decoder_ffn_dim, config.max_position_embeddings) == (48, 48, 128)
    special = tokenizer.special
    assert (config.vocab_size, config.pad_token_id, config.eos_token_id) == (tokenizer.vocab_size, special.pad,
                                                                             special.eos)
    assert config.decoder_start_token_id == special.bos and config.forced_eos_token_id is None


def test_barts_logits_read_the_source_of_the_scripts_batch_and_not_its_padding(device: torch.device):
    # BART's 500 summaries of the 60-minute table are one text: its input must still reach it through the batch
    from transformers import BartForConditionalGeneration

    bench = load_script("bench_quality")
    tokenizer = train_tokenizer(["the cat sat on the mat", "a dog ran in the park"] * 20, vocab_size=80)
    torch.manual_seed(0)
    model = BartForConditionalGeneration(bench.bart_config(tiny_model_config(), tokenizer, 64)).to(device).eval()
    layout = FlatLayout(max_tokens=6, separator_id=tokenizer.paragraph_separator_id)

    def logits(first_source_token: int, padding_id: int) -> torch.Tensor:
        examples = [EncodedExample(id="a", paragraphs=[[first_source_token, 8, 9, 10]], target=[12, 13],
                                   references=["x"], provenance=[(0, 0)]),
                    EncodedExample(id="b", paragraphs=[[7]], target=[15], references=["y"], provenance=[(0, 0)])]
        batch = bench.bart_batch(examples, tokenizer=tokenizer, layout=layout)
        padding = ~batch["attention_mask"]
        assert padding[1].any()  # the second source is padded
        batch["input_ids"] = batch["input_ids"].masked_fill(padding, padding_id)
        with torch.no_grad():
            return model(**{name: value.to(device) for name, value in batch.items()}).logits

    base = logits(7, tokenizer.special.pad)
    assert not torch.allclose(logits(20, tokenizer.special.pad)[0], base[0])  # a source token changes the logits
    torch.testing.assert_close(logits(7, 30), base)  # what stands in the padding changes none


def test_the_budget_is_spent_once_its_cpu_seconds_are():
    clock = load_script("bench_quality").BudgetClock(cpu_seconds=0.05)
    clock.start()
    assert not clock.spent()
    while not clock.spent():
        torch.ones(64, 64) @ torch.ones(64, 64)  # CPU work: the process's CPU time runs on
    assert clock.minutes()["train_minutes_cpu"] >= round(0.05 / 60, 3)


@pytest.mark.slow
def test_each_system_trains_for_the_budget_and_is_scored_on_the_same_articles(tmp_path: Path):
    pytest.importorskip("accelerate", reason="BART's Seq2SeqTrainer needs accelerate (the bench and ci extras)")
    bench = load_script("bench_quality")
    corpus = write_corpus(tmp_path / "corpus", {split: cnndm_rows(split) for split in ("train", "validation")},
                          "jsonl")
    minutes = 0.03
    report = bench.main(["--data", str(corpus), "--minutes", str(minutes), "--eval-examples", "4", "--out",
                         str(tmp_path / "out"), "--threads", "1", "--bootstrap", "20",
                         *(f"--override={option}" for option in TINY_RECIPE)])
    assert json.loads((tmp_path / "out" / "bench_quality.json").read_text()) == report
    assert report["command"].startswith("python scripts/bench_quality.py --data ")
    assert report["machine"]["cpu_count"] >= 1 and report["date"][:2] == "20" and report["eval_split"] == "validation"
    rows = report["systems"]
    assert [row["name"] for row in rows] == ["hierarchical", "flat", "bart"]
    for row in rows:
        assert row["eval_examples"] == 4
        assert row["train_minutes_cpu"] >= minutes and row["train_minutes_wall"] > 0
        assert row["cpu_minutes_total"] >= row["train_minutes_cpu"]
        assert isinstance(row["steps"], int) and row["steps"] >= 1
        predictions = [json.loads(line) for line in Path(row["predictions"]).read_text().splitlines()]
        assert [p["id"] for p in predictions] == [f"validation-00000{i}" for i in range(1, 5)]
        assert isinstance(row["articles_seen"], int) and row["steps"] <= row["articles_seen"] <= 8 * row["steps"]
        for column in ("R1", "R2", "RL", "Lsum"):
            assert isinstance(row[column], float) and 0 <= row[column] <= 100
            low, high = row["ci"][column]
            assert low <= high
    assert set(report["significance"]) == {"hierarchical vs flat", "hierarchical vs bart"}
    assert set(report["significance"]["hierarchical vs bart"]) == {"R1", "R2", "RL", "Lsum"}
    flat_command = report["commands"]["flat-train"]
    assert "experiment=cnndm_cpu" in flat_command and "model=flat_small" in flat_command
    # a CPU-time budget has no last step for the recipe's cosine decay: every system trains with noam
    assert all("optim=noam" in report["commands"][f"{name}-train"] for name in ("hierarchical", "flat"))
    assert (tmp_path / "out" / "hierarchical" / "budget_end.ckpt").is_file()
