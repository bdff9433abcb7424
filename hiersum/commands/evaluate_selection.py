"""``hiersum evaluate-selection``: how much of the references the top-L' paragraphs of each selection
strategy cover (Liu & Lapata 2019, Table 1).

Examples::

    hiersum evaluate-selection data=multinews data.path=DIR split=test ranker=RUN/checkpoints/ranker-best.pt
    hiersum evaluate-selection data=jsonl data.path=DIR strategies=[first,tfidf,oracle] budgets=[8,24,40]

Writes ``<run>/selection.json`` and ``<run>/selection.md`` and prints the Markdown. The work is
:mod:`hiersum.evaluation.selection`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from hiersum.checkpoints.ranker import RankerScorer, load_ranker_scorer
from hiersum.commands.composed import command_config
from hiersum.config import EvaluateSelectionConfig, Paragraphs
from hiersum.data.corpus_splits import paragraphed_split
from hiersum.data.corpus_tokenizer import prepare_tokenizer
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.evaluation.selection import evaluate_selection, selection_json, selection_markdown

USAGE = "hiersum evaluate-selection data=FORMAT data.path=DIR [strategies=[...]] [budgets=[...]]"


def _rule_tokenizer(cfg: EvaluateSelectionConfig, ranker: RankerScorer | None) -> SubwordTokenizer | None:
    """What counts the paragraph rule's tokens: the ranker's tokenizer (its paragraphs were counted with it), else
    ``cfg.tokenizer`` under ``data.paragraphs=sentences``; None under ``given``, which counts none."""
    if ranker is not None:
        return ranker.tokenizer
    return prepare_tokenizer(cfg.tokenizer, cfg.data) if cfg.data.paragraphs is Paragraphs.sentences else None


def evaluate_selection_command(cfg: EvaluateSelectionConfig | DictConfig) -> dict[str, Any]:
    """Evaluate ``cfg.strategies`` on ``cfg.split`` of ``cfg.data``, its paragraphs made by the paragraph rule as
    encoding makes them (every strategy, the oracle among them, ranks the same paragraphs); write and return the JSON
    report.
    ``cfg``: the typed config, or the composed Hydra config it is converted from."""
    cfg = command_config(cfg, EvaluateSelectionConfig, usage=USAGE)
    # a file that is no ranker checkpoint: its CheckpointError (a UsageError, one line)
    ranker = load_ranker_scorer(cfg.ranker) if "ranker" in cfg.strategies else None
    examples = paragraphed_split(cfg.data, cfg.split, _rule_tokenizer(cfg, ranker))
    examples = examples[: cfg.limit_examples] if cfg.limit_examples else examples
    results = evaluate_selection(examples, cfg.strategies, cfg.budgets, ranker=ranker, bootstrap=cfg.bootstrap)
    report = {"data": cfg.data.path, "split": cfg.split, "examples": len(examples), "ranker": cfg.ranker,
              "bootstrap": {"samples": cfg.bootstrap.samples, "level": cfg.bootstrap.level},
              "recall": selection_json(results)}
    output = Path(cfg.paths["output_dir"])
    output.mkdir(parents=True, exist_ok=True)
    (output / "selection.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    markdown = selection_markdown(results, title=f"Paragraph selection: {Path(cfg.data.path).name} {cfg.split} "
                                                 f"({len(examples)} examples)")
    (output / "selection.md").write_text(markdown, encoding="utf-8")
    print(markdown)
    return report
