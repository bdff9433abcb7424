"""Evaluation reports of a run directory: ``metrics.json``, ``report.md``, ``predictions.jsonl``.

The metrics dict handed to :func:`write_report` is laid out as::

    {
        "test": {                       # a split name ("test", "validation", ...)
            "model": {"rouge1": ..., "rouge2": ..., "rougeL": ..., "rougeLsum": ...,
                      "bleu": ..., "bleu_signature": "...", "perplexity": ...},
            "lead": {"rouge1": ..., ..., "bleu": ..., "bleu_signature": "..."},
        },
        "n_examples": 100,
        "checkpoint": "...", "split": "test", "decode": {...}, "versions": {...},
    }

A top-level entry is a split when its value is a dict of systems, each a dict holding at
least one ROUGE figure. Every file is written atomically (a temporary file in the same
folder, then ``os.replace``), so a crash never leaves a half-written report behind.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hiersum.metrics import ROUGE_TYPES

# (metrics key, column header) of the results table, in order.
TABLE_COLUMNS = (
    ("rouge1", "ROUGE-1"),
    ("rouge2", "ROUGE-2"),
    ("rougeL", "ROUGE-L"),
    ("rougeLsum", "ROUGE-Lsum"),
    ("bleu", "BLEU"),
    ("perplexity", "Perplexity"),
)
VERSIONED_PACKAGES = ("rouge-score", "sacrebleu", "torch")
N_EXAMPLES_SHOWN = 3


def library_versions() -> dict[str, str]:
    """Installed versions of the metric libraries, torch and Python."""
    versions = {}
    for package in VERSIONED_PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "not installed"
    versions["python"] = platform.python_version()
    return versions


def _json_default(obj: Any) -> str:
    """Serialise paths as strings; refuse anything else json cannot write."""
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"cannot write {type(obj).__name__} to JSON: {obj!r}")


def _write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as indented UTF-8 JSON to ``path``, atomically (paths become strings)."""
    text = json.dumps(obj, indent=2, ensure_ascii=False, default=_json_default)
    _write_text_atomic(path, text + "\n")


def write_predictions(path: str | Path, records: Iterable[dict]) -> None:
    """Write ``records`` (e.g. ``{"id", "summary", "reference"}``) as JSONL, atomically."""
    lines = [json.dumps(record, ensure_ascii=False, default=_json_default) for record in records]
    _write_text_atomic(path, "".join(line + "\n" for line in lines))


def _is_split(value: Any) -> bool:
    """True when ``value`` maps system names to metric dicts (see the module docstring)."""
    return (
        isinstance(value, Mapping)
        and len(value) > 0
        and all(isinstance(system, Mapping) for system in value.values())
        and any(name in system for system in value.values() for name in ROUGE_TYPES)
    )


def _format_figure(value: Any) -> str:
    """A number with 2 decimals; blank for a missing or non-numeric value."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return ""
    return f"{value:.2f}"


def _blockquote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines() or [""])


def _split_section(split: str, systems: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Markdown lines of one split: the results table and its BLEU signatures."""
    lines = [f"## Split: {split}", ""]
    lines.append("| System | " + " | ".join(header for _, header in TABLE_COLUMNS) + " |")
    lines.append("|---|" + "---:|" * len(TABLE_COLUMNS))
    for name, scores in systems.items():
        cells = [_format_figure(scores.get(key)) for key, _ in TABLE_COLUMNS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    signatures = {
        name: scores["bleu_signature"]
        for name, scores in systems.items()
        if scores.get("bleu_signature")
    }
    if signatures:
        lines.append("BLEU signature (sacrebleu):")
        lines.append("")
        lines.extend(f"- {name}: `{signature}`" for name, signature in signatures.items())
        lines.append("")
    return lines


def _examples_section(predictions: Sequence[Mapping[str, Any]]) -> list[str]:
    """Markdown lines showing the first predictions next to their references."""
    lines = ["## Examples", ""]
    for i, record in enumerate(predictions[:N_EXAMPLES_SHOWN]):
        lines += [f"### {record.get('id', i)}", "", "**Prediction**", ""]
        lines += [_blockquote(str(record.get("summary", ""))), ""]
        references = record.get("reference", record.get("references", ""))
        if isinstance(references, str):
            references = [references]
        for j, reference in enumerate(references):
            label = "**Reference**" if len(references) == 1 else f"**Reference {j + 1}**"
            lines += [label, "", _blockquote(str(reference)), ""]
    return lines


def render_markdown(
    metrics: Mapping[str, Any], predictions: Sequence[Mapping[str, Any]] | None = None
) -> str:
    """The Markdown report of ``metrics`` (layout in the module docstring).

    One results table per split (rows: systems; columns: ROUGE-1/2/L/Lsum F1, BLEU,
    perplexity; 2 decimals, blank where absent), the BLEU signatures, the other run
    facts (checkpoint, decoding settings, ...), library versions (``metrics["versions"]``
    when recorded, else the installed ones) and, when ``predictions`` are given, the
    first few predictions next to their references.
    """
    lines = ["# hiersum evaluation report", ""]
    for split, systems in metrics.items():
        if _is_split(systems):
            lines += _split_section(split, systems)

    facts = {
        key: value for key, value in metrics.items() if key != "versions" and not _is_split(value)
    }
    if facts:
        lines += ["## Run", ""]
        for key, value in facts.items():
            if isinstance(value, Mapping | list | tuple):
                value = json.dumps(value, ensure_ascii=False, default=_json_default)
            lines.append(f"- {key}: `{value}`")
        lines.append("")

    versions = metrics.get("versions") or library_versions()
    lines += ["## Library versions", ""]
    lines += [f"- {package}: {version}" for package, version in versions.items()]
    lines.append("")

    if predictions:
        lines += _examples_section(predictions)
    return "\n".join(lines).rstrip("\n") + "\n"


def write_report(
    run_dir: str | Path, metrics: dict, predictions: list[dict] | None = None
) -> dict[str, Path]:
    """Write ``metrics.json``, ``report.md`` and (when given) ``predictions.jsonl``.

    Returns the written paths under the keys ``"metrics"``, ``"report"`` and
    ``"predictions"``.
    """
    run_dir = Path(run_dir)
    paths = {"metrics": run_dir / "metrics.json", "report": run_dir / "report.md"}
    write_json_atomic(paths["metrics"], metrics)
    _write_text_atomic(paths["report"], render_markdown(metrics, predictions))
    if predictions is not None:
        paths["predictions"] = run_dir / "predictions.jsonl"
        write_predictions(paths["predictions"], predictions)
    return paths
