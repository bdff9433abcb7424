"""Evaluation of paragraph selection (Liu & Lapata 2019, Table 1): how much of the reference the top-L'
paragraphs of each strategy cover, as the ROUGE-L and ROUGE-2 recall of the paragraphs (joined, in rank
order) against the reference (the best-matching one when there are several; rouge-score, stemming on),
averaged over the examples with bootstrap intervals (:mod:`hiersum.evaluation.stats`).

Strategies: ``first`` (document order), ``round_robin``, ``tfidf`` (similarity to the title or centroid),
``ranker`` (a trained ranker checkpoint) and ``oracle`` (paragraphs by their own ROUGE-2 recall against
the reference, :class:`hiersum.data.ranker_data.Rouge2Recall`: the ranker's training target, an upper bound
of what it can learn).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rouge_score import rouge_scorer

from hiersum.config import BootstrapConfig, SelectionStrategy
from hiersum.data.ranker_data import Rouge2Recall
from hiersum.data.schema import Example
from hiersum.data.selection import ParagraphScorer, TfidfScorer, select_paragraphs
from hiersum.evaluation.stats import bootstrap_indices, confidence_interval, mean_metric

STRATEGIES = tuple(SelectionStrategy)
"""The strategies :func:`strategy_orders` runs (:class:`hiersum.config.SelectionStrategy`, which the command's
config checks ``strategies`` against)."""
METRICS = ("rougeL", "rouge2")
"""rouge-score types reported (their recall)."""


def strategy_orders(
    examples: Sequence[Example], strategy: str, ranker: ParagraphScorer | None = None
) -> list[list[tuple[int, int]]]:
    """The (document, paragraph) order of every example under ``strategy`` (``ranker`` needs its scorer)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategies: unknown selection strategy {strategy!r}; "
                         f"expected one of {', '.join(STRATEGIES)}")
    if strategy == "ranker" and ranker is None:
        raise ValueError("the ranker strategy needs a ranker checkpoint (ranker=PATH)")
    scorers: dict[str, ParagraphScorer | None] = {"tfidf": TfidfScorer(), "ranker": ranker, "oracle": Rouge2Recall()}
    return select_paragraphs(examples, strategy, scorers.get(strategy))


def coverage_recall(examples: Sequence[Example], orders: Sequence[Sequence[tuple[int, int]]],
                    budget: int) -> dict[str, list[float]]:
    """Per example, the ROUGE-L and ROUGE-2 recall of its top-``budget`` paragraphs (joined by newlines)
    against its best-matching reference: ``{"rougeL": [...], "rouge2": [...]}``."""
    scorer = rouge_scorer.RougeScorer(list(METRICS), use_stemmer=True)
    recalls: dict[str, list[float]] = {metric: [] for metric in METRICS}
    for example, order in zip(examples, orders, strict=True):
        text = "\n".join(example.documents[d][p] for d, p in order[:budget])
        scores = [scorer.score(reference, text) for reference in example.references]
        for metric in METRICS:
            recalls[metric].append(max(score[metric].recall for score in scores))
    return recalls


@dataclass(frozen=True)
class Coverage:
    """Mean recall (x100) of a strategy at a budget, with its bootstrap interval (None: no bootstrap)."""

    mean: float
    low: float | None
    high: float | None

    def as_dict(self) -> dict[str, float | None]:
        return {"mean": self.mean, "low": self.low, "high": self.high}


def evaluate_selection(
    examples: Sequence[Example], strategies: Sequence[str], budgets: Sequence[int], *,
    ranker: ParagraphScorer | None = None, bootstrap: BootstrapConfig | None = None,
) -> dict[str, dict[int, dict[str, Coverage]]]:
    """``{strategy: {budget: {metric: Coverage}}}`` over ``examples`` (each with a reference)."""
    if not examples:
        raise ValueError("no examples to evaluate the selection on")
    bootstrap = bootstrap or BootstrapConfig()
    indices = bootstrap_indices(len(examples), bootstrap.samples, bootstrap.seed) if bootstrap.samples else None
    results: dict[str, dict[int, dict[str, Coverage]]] = {}
    for strategy in strategies:
        orders = strategy_orders(examples, strategy, ranker)
        results[strategy] = {}
        for budget in budgets:
            per_example = coverage_recall(examples, orders, budget)
            results[strategy][budget] = {}
            for metric, values in per_example.items():
                resamplable = mean_metric([100.0 * value for value in values])
                low, high = (confidence_interval(resamplable, indices, bootstrap.level) if indices is not None
                             else (None, None))
                results[strategy][budget][metric] = Coverage(resamplable.point, low, high)
    return results


def selection_json(results: Mapping[str, Mapping[int, Mapping[str, Coverage]]]) -> dict[str, object]:
    """The results as JSON: ``{strategy: {str(budget): {metric: {mean, low, high}}}}``."""
    return {strategy: {str(budget): {metric: coverage.as_dict() for metric, coverage in metrics.items()}
                       for budget, metrics in by_budget.items()}
            for strategy, by_budget in results.items()}


def selection_markdown(results: Mapping[str, Mapping[int, Mapping[str, Coverage]]], *, title: str) -> str:
    """One table per metric: a row per strategy, a column per budget (mean [low, high])."""
    lines = [f"# {title}", ""]
    budgets = sorted({budget for by_budget in results.values() for budget in by_budget})
    names = {"rougeL": "ROUGE-L recall", "rouge2": "ROUGE-2 recall"}
    for metric in METRICS:
        lines += [f"## {names[metric]} of the top-L' paragraphs", "",
                  "| strategy | " + " | ".join(f"L'={budget}" for budget in budgets) + " |",
                  "|---|" + "---:|" * len(budgets)]
        for strategy, by_budget in results.items():
            cells = []
            for budget in budgets:
                coverage = by_budget[budget][metric]
                interval = f" [{coverage.low:.1f}, {coverage.high:.1f}]" if coverage.low is not None else ""
                cells.append(f"{coverage.mean:.2f}{interval}")
            lines.append(f"| {strategy} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)
