"""``hiersum summarize`` with a ``model.copy_oov`` checkpoint writes a source word the vocabulary lacks: the word is
encoded as its example's extended id (by its text), copied, and written back as its text.

The checkpoint: the copy-task model (:mod:`tests.helpers.copy_task`, trained with copied words hidden as extended
ids) under its word-level tokenizer (word ``wN`` is id N: :func:`tests.helpers.copy_task.copy_task_tokenizer`), so a
record of the words it was trained on is summarized by copying its first 8 words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from hiersum.commands.summarize import summarize
from hiersum.config import DataConfig, OptimConfig
from hiersum.training.module import HierSumModule, module_hparams
from tests.helpers.copy_task import (
    COPY_K,
    COPY_P,
    COPY_T,
    copy_task_tokenizer,
    hide_copied_words,
    train_on_copy_task,
)
from tests.helpers.model import tiny_config

pytestmark = pytest.mark.slow  # trains the tiny copy model (~5 s on 2 cores)

def save_copy_checkpoint(path: Path) -> Path:
    """The copy-task model with ``copy_oov`` and its tokenizer as a training checkpoint (a source of 2 paragraphs
    of 6 tokens, as in training)."""
    tokenizer = copy_task_tokenizer()
    trained = train_on_copy_task(copy_attention=True, copy_oov=True, transform=hide_copied_words)
    data = DataConfig(path="copy-task", max_paragraphs=COPY_P, max_paragraph_tokens=COPY_T)
    module = HierSumModule(**module_hparams(tiny_config(copy_attention=True, copy_oov=True), OptimConfig(), data,
                                            tokenizer))
    module.model.load_state_dict(trained.state_dict())
    checkpoint = {"state_dict": module.state_dict(), "hyper_parameters": dict(module.hparams)}
    module.on_save_checkpoint(checkpoint)
    torch.save(checkpoint, path)
    return path


def words(ids: range) -> list[str]:
    return [f"w{i}" for i in ids]


def test_a_word_outside_the_vocabulary_is_copied_into_the_summary_as_its_text(tiny_cfg, tmp_path):
    checkpoint = save_copy_checkpoint(tmp_path / "copy.ckpt")
    first, second = words(range(10, 16)), words(range(20, 26))
    records = [  # an unknown word among the first 8 of each source: one each, then one twice
        {"id": "zoe", "documents": [[" ".join(first[:2] + ["Zoë"] + first[3:]), " ".join(second)]]},
        {"id": "both", "documents": [[" ".join(["Øster"] + first[1:]), " ".join(["Åsa", "Øster"] + second[2:])]]},
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    output = tmp_path / "out.jsonl"
    summarize(tiny_cfg(f"checkpoint={checkpoint}", f"input={source}", f"output={output}", "decode.beam_size=3",
                       f"decode.max_length={COPY_K + 1}", "decode.min_length=0", "decode.alpha=0",
                       name="summarize", output_dir=tmp_path / "hydra"))
    summaries = [json.loads(line)["summary"] for line in output.read_text(encoding="utf-8").splitlines()]
    assert summaries == [" ".join(first[:2] + ["Zoë"] + first[3:] + second[:2]),
                         " ".join(["Øster"] + first[1:] + ["Åsa", "Øster"])]
