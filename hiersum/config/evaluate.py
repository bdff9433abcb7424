"""The configs of ``hiersum evaluate`` and ``hiersum evaluate-selection``, and their bootstrap."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hiersum.config.checks import MISSING, at_least_one
from hiersum.config.choices import Baseline, SelectionStrategy
from hiersum.config.data import DataConfig, TokenizerConfig
from hiersum.config.decode import DecodeConfig


@dataclass
class BootstrapConfig:
    """Bootstrap resampling of the examples (intervals and paired tests); ``hiersum evaluate bootstrap``."""

    samples: int = 1000
    """Resamples; 0 turns intervals and paired tests off."""
    seed: int = 12345
    level: float = 0.95
    """Coverage of the intervals (percentile bootstrap)."""

    def __post_init__(self) -> None:
        if self.samples < 0:
            raise ValueError(f"bootstrap.samples must be >= 0, found {self.samples}")
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"bootstrap.level must be in (0, 1), found {self.level}")


@dataclass
class EvaluateConfig:
    """``conf/evaluate.yaml`` (``hiersum evaluate``): its top-level keys, whose values the YAML gives."""

    task_name: str = MISSING
    """The run directory's task folder (``outputs/<task_name>/...``); ``evaluate``."""
    checkpoint: str | None = MISSING
    """A hiersum checkpoint (or model directory of ``hiersum export``) that decodes the split; exactly one of
    ``checkpoint`` and ``predictions``."""
    predictions: str | None = MISSING
    """A JSONL of ``{"id", "summary"}`` (as ``hiersum summarize`` writes) scored without a model."""
    name: str = MISSING
    """The evaluated system's name in ``metrics.json`` and the reports; not a baseline's name."""
    compare: str | None = MISSING
    """Another predictions JSONL of the same examples, tested against the system (paired bootstrap; None: none)."""
    split: str = MISSING
    """The split of ``data`` scored (``test``, ``validation``, ``train``; ``dev`` for SciTLDR)."""
    device: str = MISSING
    """Where a checkpoint decodes: ``cpu`` or ``cuda[:N]``."""
    run_dir: str | None = MISSING
    """The training run whose ``csv/metrics.csv`` curves the HTML report draws (None: the checkpoint's run)."""
    attention_examples: int = MISSING
    """Attention heatmaps of the first N examples (checkpoints with inter-paragraph attention; 0: none)."""
    compile: bool = False
    """Compile the model's repeated blocks in place (:meth:`hiersum.model.HierSum.compile`). Off by default: on
    a CPU it gains nothing (docs/benchmarks.md, "Compiling") and its first steps cost compile time."""
    baselines: list[Baseline] = MISSING
    """The baselines scored beside the system: ``lead``, ``lead3``, ``oracle``, ``lexrank``."""
    bootstrap: BootstrapConfig = MISSING
    """Bootstrap intervals and the paired test of ``compare``."""
    workers: int = 1
    """Processes that score the split's examples (ROUGE, BLEU and chrF statistics, baselines); the same figures
    for any number (:class:`hiersum.evaluation.scoring.ScoringConfig`)."""
    data: DataConfig = MISSING
    """The corpus; with a checkpoint, its paragraph selection unless given on the command line."""
    decode: DecodeConfig = MISSING
    """The beam search of a checkpoint."""
    paths: dict[str, Any] = MISSING
    """``output_dir`` (the run directory, where the reports go) and the project's folders."""

    def __post_init__(self) -> None:
        at_least_one(self, "workers")
        self.baselines = [Baseline.coerce(name, "baselines") for name in self.baselines]
        if (self.checkpoint is None) == (self.predictions is None):
            found = "neither" if self.checkpoint is None else "both"
            raise ValueError("give exactly one of checkpoint=PATH (decode the split) and predictions=FILE "
                             f"(score outputs), found {found}")
        if self.name in self.baselines:
            raise ValueError(f"name must not be the name of a baseline ({', '.join(self.baselines)}), "
                             f"found {self.name!r}; choose another")


@dataclass
class EvaluateSelectionConfig:
    """``conf/evaluate_selection.yaml`` (``hiersum evaluate-selection``): how much of the references the
    selected paragraphs cover, per selection strategy and paragraph budget (Liu & Lapata's Table 1)."""

    task_name: str = MISSING
    """The run directory's task folder (``outputs/<task_name>/...``); ``evaluate_selection``."""
    split: str = MISSING
    """The split of ``data`` evaluated."""
    strategies: list[SelectionStrategy] = MISSING
    """One or more :class:`~hiersum.config.choices.SelectionStrategy`: ``first``, ``round_robin``, ``tfidf``,
    ``ranker`` (needs ``ranker``) and ``oracle`` (paragraphs by their own ROUGE-2 recall against the reference)."""
    ranker: str | None = MISSING
    """A ranker checkpoint (``hiersum train-ranker``) for the ``ranker`` strategy."""
    budgets: list[int] = MISSING
    """L': the numbers of top paragraphs evaluated, each >= 1."""
    limit_examples: int | None = MISSING
    """Evaluate only the first N examples (None: all)."""
    bootstrap: BootstrapConfig = MISSING
    """The bootstrap intervals of the recalls."""
    data: DataConfig = MISSING
    """The corpus, read as text (its paragraphs, titles and references), its paragraphs made by the paragraph rule
    (``data.paragraphs``) as encoding makes them."""
    tokenizer: TokenizerConfig = MISSING
    """What counts the tokens of ``data.paragraphs=sentences`` (give the model's: ``tokenizer.path=RUN/tokenizer``);
    with a ranker, the ranker's tokenizer counts them; unused under ``given``."""
    paths: dict[str, Any] = MISSING
    """``output_dir`` (the run directory: ``selection.json``, ``selection.md``) and the project's folders."""

    def __post_init__(self) -> None:
        if not self.strategies or any(name not in SelectionStrategy.__members__ for name in self.strategies):
            raise ValueError(f"strategies must be one or more of {', '.join(SelectionStrategy)}, "
                             f"found {[str(name) for name in self.strategies]}")
        self.strategies = [SelectionStrategy(name) for name in self.strategies]
        if not self.budgets or min(self.budgets) < 1:
            raise ValueError(f"budgets must be one or more integers >= 1, found {list(self.budgets)}")
        if "ranker" in self.strategies and not self.ranker:
            raise ValueError("strategies holds ranker: give ranker=PATH (a checkpoint of hiersum train-ranker), "
                             f"found ranker={self.ranker!r}")
