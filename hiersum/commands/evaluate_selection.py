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

from hiersum.checkpoints.ranker import load_ranker_scorer
from hiersum.config import BootstrapConfig, DataConfig, UsageError, typed_config
from hiersum.data.corpus_splits import read_text_split
from hiersum.evaluation.selection import STRATEGIES, evaluate_selection, selection_json, selection_markdown


def evaluate_selection_command(cfg: DictConfig) -> dict[str, Any]:
    """Evaluate ``cfg.strategies`` on ``cfg.split`` of ``cfg.data``; write and return the JSON report."""
    data: DataConfig = typed_config(cfg.data)
    bootstrap: BootstrapConfig = typed_config(cfg.bootstrap)
    strategies, budgets = list(cfg.strategies), [int(budget) for budget in cfg.budgets]
    unknown = [name for name in strategies if name not in STRATEGIES]
    if unknown or not strategies:
        raise UsageError(f"strategies: unknown {unknown} (expected some of {', '.join(STRATEGIES)})")
    if not budgets or min(budgets) < 1:
        raise UsageError(f"budgets must be integers >= 1, found {budgets}")
    ranker = None
    if "ranker" in strategies:
        if not cfg.ranker:
            raise UsageError("strategies holds ranker: give ranker=PATH (a checkpoint of hiersum train-ranker)")
        ranker = load_ranker_scorer(cfg.ranker)  # a file that is no ranker: its CheckpointError (a UsageError)
    examples, _ = read_text_split(data, cfg.split)
    examples = examples[: cfg.limit_examples] if cfg.limit_examples else examples
    results = evaluate_selection(examples, strategies, budgets, ranker=ranker, bootstrap=bootstrap)
    report = {"data": data.path, "split": cfg.split, "examples": len(examples), "ranker": cfg.ranker,
              "bootstrap": {"samples": bootstrap.samples, "level": bootstrap.level},
              "recall": selection_json(results)}
    output = Path(cfg.paths.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    (output / "selection.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    markdown = selection_markdown(results, title=f"Paragraph selection: {Path(data.path).name} {cfg.split} "
                                                 f"({len(examples)} examples)")
    (output / "selection.md").write_text(markdown, encoding="utf-8")
    print(markdown)
    return report
