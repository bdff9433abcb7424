"""``hiersum train-ranker``: train the paragraph ranker of Liu & Lapata (2019).

Examples::

    hiersum train-ranker data=multinews data.path=/data/multi-news
    hiersum train-ranker data=jsonl data.path=/data/corpus ranker_model=paper trainer.max_epochs=4

Writes ``<run>/checkpoints/ranker-best.pt`` (the epoch whose top-``top_k`` paragraphs reach the highest
summed ROUGE-2 recall on the validation split), which ``data.selection=ranker data.ranker=PATH`` and
``hiersum rank ranker=PATH`` read. The training is :func:`hiersum.training.ranker.fit_ranker`. Then the best
ranker is compared on the validation split with document order (``first``) and ``tfidf``: the recall table of
:mod:`hiersum.evaluation.selection` (``hiersum evaluate-selection``) at ``report_budgets``, printed and written
to ``<run>/selection.md`` and ``<run>/metrics.json``; a one-line warning when the ranker keeps less of the
references than document order at L'=``top_k`` (ROUGE-L recall).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from hiersum.atomic import write_text_atomically
from hiersum.checkpoints.ranker import load_ranker_scorer
from hiersum.commands.composed import command_config
from hiersum.config import BootstrapConfig, RankerTrainConfig
from hiersum.data.corpus_splits import paragraphed_split
from hiersum.data.corpus_tokenizer import prepare_tokenizer
from hiersum.evaluation.report import write_json_atomic
from hiersum.evaluation.selection import Coverage, evaluate_selection, selection_json, selection_markdown
from hiersum.training.ranker import fit_ranker

USAGE = "hiersum train-ranker data=FORMAT data.path=DIR"
BASELINES = ("first", "tfidf")
"""The strategies the trained ranker is compared with at the end of a run."""
COMPARED_METRIC = "rougeL"
"""The recall the warning compares (the ROUGE-L recall of the top-``top_k`` paragraphs)."""


def below_document_order(results: dict[str, dict[int, dict[str, Coverage]]], budget: int) -> str | None:
    """The warning when the ranker's mean ROUGE-L recall at L'=``budget`` is below document order's, or None."""
    ranker, first = (results[name][budget][COMPARED_METRIC].mean for name in ("ranker", "first"))
    if ranker >= first:
        return None
    return (f"warning: the trained ranker keeps less of the validation references than document order: "
            f"ROUGE-L recall of the top {budget} paragraphs {ranker:.2f} < {first:.2f} (first); "
            f"data.selection=first (or tfidf, {results['tfidf'][budget][COMPARED_METRIC].mean:.2f}) selects better")


def compare_on_validation(cfg: RankerTrainConfig, checkpoint: str) -> dict[str, dict[int, dict[str, Coverage]]]:
    """The recall table of the ranker at ``checkpoint``, ``first`` and ``tfidf`` on the validation split's
    paragraphs as the ranker was trained on them (the paragraph rule; means, no bootstrap) at ``cfg.report_budgets``
    and ``cfg.top_k``."""
    tokenizer = prepare_tokenizer(cfg.tokenizer, cfg.data)  # the training's, found again in the cache
    examples = paragraphed_split(cfg.data, "validation", tokenizer)
    budgets = sorted({*cfg.report_budgets, cfg.top_k})
    return evaluate_selection(examples, ["ranker", *BASELINES], budgets, ranker=load_ranker_scorer(checkpoint),
                              bootstrap=BootstrapConfig(samples=0))


def train_ranker(cfg: RankerTrainConfig | DictConfig) -> dict[str, Any]:
    """Fit the ranker, compare it with document order and tf-idf on the validation split; print and return where
    its checkpoint is, the recall it reached and the table (also in ``<run>/metrics.json``). ``cfg``: the typed
    config, or the composed Hydra config it is converted from."""
    cfg = command_config(cfg, RankerTrainConfig, usage=USAGE)
    result = fit_ranker(cfg)
    print(f"ranker: {result['checkpoint']} (val_top_k_recall {result['val_top_k_recall']:.4f}, top_k {cfg.top_k})")
    results = compare_on_validation(cfg, result["checkpoint"])
    output = Path(cfg.paths["output_dir"])
    markdown = selection_markdown(results, title=f"Trained ranker against document order and tf-idf: "
                                                 f"{Path(cfg.data.path).name} validation")
    write_text_atomically(output / "selection.md", markdown)
    print(markdown)
    warning = below_document_order(results, cfg.top_k)
    if warning is not None:
        print(warning, file=sys.stderr)
    result = {**result, "validation_recall": selection_json(results), "below_document_order": warning is not None}
    write_json_atomic(output / "metrics.json", result)
    return result
