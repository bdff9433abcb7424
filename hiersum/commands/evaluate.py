"""``hiersum evaluate``: score a data split, decoding it with a checkpoint or reading given predictions
(:func:`evaluate`).

Writes ``metrics.json``, ``report.md``, ``report.html``, ``scores.csv`` and ``predictions.jsonl`` in
the run directory (see :mod:`hiersum.evaluation.report` and :mod:`hiersum.evaluation.scoring`), holding
its lock throughout (:mod:`hiersum.data.output_lock`: a second evaluation into it is refused). A
problem with the command itself (both or neither of ``checkpoint`` and ``predictions``, a missing file,
predictions that do not match the split's ids, a report file that is one of the inputs) raises
:class:`hiersum.errors.UsageError`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from hiersum.commands.common import count_skipped
from hiersum.commands.composed import command_config
from hiersum.config import LINE_LAYOUT_FIELDS, SELECTION_FIELDS, DataConfig, EvaluateConfig, config_dict
from hiersum.data.batching import collate
from hiersum.data.corpus_splits import CorpusSplits, existing_split_files, read_text_split, write_data_errors
from hiersum.data.formats.registry import format_spec
from hiersum.data.output_lock import output_lock
from hiersum.data.overwrite import refuse_overwriting_inputs
from hiersum.data.schema import EncodedExample, Example
from hiersum.data.sentences import SENTENCE_SPLITTER
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.errors import UsageError
from hiersum.evaluation.machine import machine_description
from hiersum.evaluation.report import Attention, library_versions, write_report
from hiersum.evaluation.report_files import report_outputs
from hiersum.evaluation.scoring import ScoringConfig, score_split, with_corpus_text
from hiersum.evaluation.split import decode_split, prediction_record, reference_token_scores
from hiersum.inference.pipeline import load_summarizer
from hiersum.model.encoder_registry import encoder_spec, validate_choices
from hiersum.model.summarizer import HierSum

N_IDS_SHOWN = 10
USAGE = "hiersum evaluate (checkpoint=CKPT | predictions=FILE) [split=test]"


CHECKPOINT_DATA_FIELDS = ("format", *LINE_LAYOUT_FIELDS, "max_target_tokens", "on_error", *SELECTION_FIELDS)
"""The ``data`` fields checkpoint mode takes from the checkpoint: its data format (with the line-pair layout's
separators, :data:`hiersum.config.LINE_LAYOUT_FIELDS`), target cut and paragraph selection
(:class:`hiersum.config.ParagraphSelection`), which shape the model's input, and what its corpus does with a bad
record (``on_error``: a recipe that skips the release's repeated ids in training skips them in its test split too,
and the report counts them)."""


def effective_data_config(trained: DataConfig | None, given: DataConfig, data_given: Collection[str]) -> DataConfig:
    """``given``, with the checkpoint's data format and paragraph selection (:data:`CHECKPOINT_DATA_FIELDS`) except
    the fields named in ``data_given`` (those the command line gave: ``data.<field>=``; ``data=<preset>`` gives
    the format)."""
    if trained is None:
        return given
    inherited = [name for name in CHECKPOINT_DATA_FIELDS if name not in data_given]
    return replace(given, **{name: getattr(trained, name) for name in inherited})


def read_predictions(path: str | Path) -> dict[str, str]:
    """``{id: summary}`` of a predictions JSONL (one ``{"id", "summary", ...}`` a line)."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"predictions file not found: {path}")
    predictions: dict[str, str] = {}
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                message = f"expected a JSON object, found invalid JSON ({error.msg})"
                raise UsageError(f"{path}:{line_number}: {message}") from None
            if not isinstance(record, dict):
                raise UsageError(f"{path}:{line_number}: expected a JSON object, found {type(record).__name__}")
            for field, kinds in (("id", (str, int)), ("summary", (str,))):
                if not isinstance(record.get(field), kinds):
                    found = type(record[field]).__name__ if field in record else "no such field"
                    raise UsageError(f"{path}:{line_number}: field '{field}': expected a string, found {found}")
            record_id = str(record["id"])
            if record_id in predictions:
                raise UsageError(f"{path}:{line_number}: field 'id': expected a unique id, found {record_id!r} again")
            predictions[record_id] = record["summary"]
    return predictions


def _listed(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:N_IDS_SHOWN])
    return shown + (f" and {len(ids) - N_IDS_SHOWN} more" if len(ids) > N_IDS_SHOWN else "")


def match_predictions(
    predictions: dict[str, str], examples: Sequence[Example], *, source: str, allow_extra: bool = False
) -> list[str]:
    """The prediction of each example, in order; a :class:`UsageError` lists missing (and, unless
    ``allow_extra``, extra) ids."""
    wanted = [example.id for example in examples]
    missing = [i for i in wanted if i not in predictions]
    extra = [] if allow_extra else sorted(set(predictions) - set(wanted))
    if missing or extra:
        problems = []
        if missing:
            problems.append(f"{len(missing)} example id(s) of the split have no prediction: {_listed(missing)}")
        if extra:
            problems.append(f"{len(extra)} prediction id(s) are not in the split: {_listed(extra)}")
        raise UsageError(f"{source}: " + "; ".join(problems))
    return [predictions[i] for i in wanted]


@torch.inference_mode()
def attention_maps(
    model: HierSum, encoded: Sequence[EncodedExample], tokenizer: SubwordTokenizer, *,
    device: torch.device | str = "cpu",
) -> list[Attention]:
    """Pooling weights and inter-paragraph attention of the last inter layer for ``encoded``
    (real paragraphs and tokens only); empty for a model without inter-paragraph layers."""
    config = model.config
    if not encoder_spec(config.encoder).inter_paragraph or not list(config.inter_layers) or not encoded:
        return []
    special = tokenizer.special
    batch = collate(list(encoded), pad_id=special.pad, bos_id=special.bos, eos_id=special.eos).to(device)
    model.eval().to(device)
    output = model.encode(batch.src, batch.src_mask, paragraph_graph=batch.paragraph_graph, return_attention=True,
                          layout=batch.layout)
    pooling, inter = output.pooling_weights[-1].float().cpu(), output.inter_attention[-1].float().cpu()
    maps = []
    for b, example in enumerate(encoded):
        P = len(example.paragraphs)
        T = max((len(p) for p in example.paragraphs), default=1)
        maps.append(Attention(example.id, pooling[b, :P, :, :T].numpy(), inter[b, :, :P, :P].numpy()))
    return maps


def _system_name(path: str, taken: Sequence[str]) -> str:
    name = Path(path).stem
    return name if name not in taken else f"{name} (compare)"


def _scoring(cfg: EvaluateConfig) -> ScoringConfig:
    """``baselines``, ``bootstrap`` and ``workers`` as a :class:`ScoringConfig` (checked by ``EvaluateConfig``)."""
    return ScoringConfig(baselines=[str(name) for name in cfg.baselines], bootstrap=cfg.bootstrap,
                         workers=cfg.workers)


def _refuse_overwriting_inputs(cfg: EvaluateConfig, data: DataConfig) -> None:
    """No report file of the run directory may be the checkpoint, a predictions file or the split's data."""
    inputs = {name: getattr(cfg, name) for name in ("checkpoint", "predictions", "compare")}
    inputs.update(existing_split_files(data, [cfg.split]))
    refuse_overwriting_inputs(report_outputs(cfg.paths["output_dir"]), inputs)


@dataclass
class _System:
    """The evaluated system's outputs on the split, and what its mode adds to the metrics and the report."""

    data: DataConfig
    """The data options the split was read with."""
    examples: list[Example]
    outputs: list[str]
    """The summary of each example, in order."""
    metrics: dict[str, Any]
    """``checkpoint`` and ``decode``, or ``predictions``."""
    curves: str | Path | None
    """The training run whose curves the HTML report draws (None: none)."""
    attention: list[Attention] = field(default_factory=list)
    token_scores: dict[str, float] = field(default_factory=dict)
    """Perplexity and token accuracy of the references (checkpoint mode)."""
    errors_file: Path | None = None
    """The records of the split left out (``data.on_error=skip``), when some were."""


def _with_checkpoint(cfg: EvaluateConfig, data_given: Collection[str], decode_given: Collection[str]) -> _System:
    """Checkpoint mode: the split decoded by ``cfg.checkpoint``."""
    summarizer = load_summarizer(cfg.checkpoint, compile=cfg.compile)
    model, tokenizer = summarizer.model, summarizer.tokenizer
    data = effective_data_config(summarizer.data_config, cfg.data, data_given)
    decode = summarizer.decoding(cfg.decode, decode_given)
    _refuse_overwriting_inputs(cfg, data)
    splits = CorpusSplits(data, tokenizer, model.config)  # prepared on disk once, then reused
    examples, encoded = splits.evaluation_split(cfg.split)
    errors_file = splits.write_errors(Path(cfg.paths["output_dir"]))
    outputs = decode_split(model, encoded, tokenizer, decode, split=cfg.split, batch_tokens=data.batch_tokens,
                           device=cfg.device)
    token_scores = reference_token_scores(model, encoded, tokenizer, batch_tokens=data.batch_tokens,
                                          device=cfg.device)
    attention = attention_maps(model, encoded[: cfg.attention_examples], tokenizer, device=cfg.device)
    return _System(data, examples, outputs, {"checkpoint": str(cfg.checkpoint), "decode": config_dict(decode)},
                   curves=cfg.run_dir or Path(cfg.checkpoint).resolve().parent.parent, attention=attention,
                   token_scores=token_scores, errors_file=errors_file)


def _with_predictions(cfg: EvaluateConfig) -> _System:
    """Predictions mode: the summaries of ``cfg.predictions``, matched to the split's examples."""
    data = cfg.data
    _refuse_overwriting_inputs(cfg, data)
    if format_spec(data.format).token_ids:
        raise UsageError(f"predictions= needs reference text: data.format={data.format} holds token ids")
    examples, errors = read_text_split(data, cfg.split)
    errors_file = write_data_errors(Path(cfg.paths["output_dir"]), {cfg.split: errors})
    if data.limit_eval_examples:
        examples = examples[: data.limit_eval_examples]
    outputs = _matched(cfg.predictions, examples, data)
    return _System(data, examples, outputs, {"predictions": str(cfg.predictions)}, curves=cfg.run_dir,
                   errors_file=errors_file)


def _matched(path: str, examples: Sequence[Example], data: DataConfig) -> list[str]:
    """:func:`match_predictions` of the predictions file ``path`` (extra ids allowed when the split is cut)."""
    return match_predictions(read_predictions(path), examples, source=str(path),
                             allow_extra=bool(data.limit_eval_examples))


def evaluate(cfg: EvaluateConfig | DictConfig, data_given: Collection[str] = (),
             decode_given: Collection[str] = ()) -> dict[str, Any]:
    """Score ``cfg.split`` (checkpoint or predictions mode) and write the report; return the metrics.
    ``cfg``: the typed config, or the composed Hydra config it is converted from; ``data_given``: the ``data``
    fields the command line gave (:func:`hiersum.cli.overrides.given_fields`): a paragraph-selection field
    among them replaces the checkpoint's, the others come from the checkpoint; ``decode_given``: the same for the
    ``decode`` fields and the search settings the checkpoint's training run recorded."""
    cfg = command_config(cfg, EvaluateConfig, usage=USAGE)
    validate_choices(cfg)
    scoring = _scoring(cfg)
    with output_lock(cfg.paths["output_dir"], what="run directory"):  # one writer of its report files
        return _evaluate_into(cfg, scoring, data_given, decode_given)


def _evaluate_into(cfg: EvaluateConfig, scoring: ScoringConfig, data_given: Collection[str],
                   decode_given: Collection[str]) -> dict[str, Any]:
    """:func:`evaluate` once it holds the lock of the run directory."""
    system = (_with_checkpoint(cfg, data_given, decode_given) if cfg.checkpoint is not None
              else _with_predictions(cfg))
    systems = {cfg.name: system.outputs}
    compare = []
    if cfg.compare:
        other = _system_name(cfg.compare, [cfg.name, *scoring.baselines])
        systems[other] = _matched(cfg.compare, system.examples, system.data)
        compare.append((cfg.name, other))
    scored = score_split(system.examples, systems, with_corpus_text(scoring, system.data), compare=compare)
    scored.systems[cfg.name].update(system.token_scores)
    metrics = {
        cfg.split: scored.systems, "n_examples": len(system.examples), **system.metrics, "split": cfg.split,
        "data_path": system.data.path, "data_format": system.data.format,
        "bootstrap": config_dict(cfg.bootstrap), "sentence_splitter": SENTENCE_SPLITTER, "versions": library_versions(),
        "machine": machine_description(),
    }
    if scored.comparisons:
        metrics["significance"] = {cfg.split: scored.comparisons}
    skipped = count_skipped(metrics, system.errors_file)
    records = [prediction_record(example, output)
               for example, output in zip(system.examples, system.outputs, strict=True)]
    run_dir = Path(cfg.paths["output_dir"])
    curves_csv = Path(system.curves) / "csv" / "metrics.csv" if system.curves else None
    write_report(run_dir, metrics, records, rows=scored.rows, curves_csv=curves_csv, attention=system.attention)
    print(f"run directory: {run_dir}")
    if skipped:
        print(skipped)
    return metrics
