"""Evaluation reports of a run directory: ``metrics.json``, ``report.md``, ``report.html``,
``predictions.jsonl`` and ``scores.csv``.

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

(every key of a system is listed in :mod:`hiersum.evaluation.scoring`: precision / recall, chrF,
``mean_over_references``, ``ci``, lengths, n-gram ratios; baselines ``oracle`` and ``lexrank`` sit
beside ``lead``; paired tests under the top-level ``significance``: ``{split: {"A vs B": {metric:
{"difference", "ci", "p_value"}}}}``).

A top-level entry is a split when its value is a dict of systems, each a dict holding at
least one ROUGE figure. ``report.html`` is self-contained: its plots (:mod:`hiersum.evaluation.plots`) are
embedded as base64 PNG. Every file is written atomically (a temporary file in the same
folder, then ``os.replace``), so a crash never leaves a half-written report behind.
"""

from __future__ import annotations

import csv
import html
import importlib.metadata
import io
import json
import os
import platform
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hiersum.evaluation import plots
from hiersum.evaluation.metrics import NGRAM_ORDERS, ROUGE_TYPES

# (metrics key, column header) of the results table, in order.
TABLE_COLUMNS = (
    ("rouge1", "ROUGE-1"),
    ("rouge2", "ROUGE-2"),
    ("rougeL", "ROUGE-L"),
    ("rougeLsum", "ROUGE-Lsum"),
    ("bleu", "BLEU"),
    ("chrf", "chrF"),
    ("perplexity", "Perplexity"),
    ("token_accuracy", "Token acc."),
)
PR_COLUMNS = tuple((f"{name}_{measure}", f"{header} {measure[0].upper()}") for name, header in TABLE_COLUMNS[:4]
                   for measure in ("precision", "recall"))
TEXT_COLUMNS = (
    ("length", "Length"),
    ("reference_length", "Ref. length"),
    *((f"novel_{n}gram", f"Novel {n}-gram %") for n in NGRAM_ORDERS),
    *((f"repeated_{n}gram", f"Repeated {n}-gram %") for n in NGRAM_ORDERS),
)
VERSIONED_PACKAGES = ("rouge-score", "sacrebleu", "torch", "torchmetrics", "numpy", "networkx", "matplotlib")
SIGNATURES = (("bleu_signature", "BLEU"), ("chrf_signature", "chrF"))
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
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; reports are meant to be read by others
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


def _format_interval(interval: Any) -> str:
    """``[low, high]`` with 2 decimals; blank when absent."""
    if not isinstance(interval, list | tuple) or len(interval) != 2:
        return ""
    return f"[{interval[0]:.2f}, {interval[1]:.2f}]"


def _table_cells(
    systems: Mapping[str, Mapping[str, Any]], columns: Sequence[tuple[str, str]], cell: Any = None
) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of a table with one row per system; ``cell(scores, key)`` formats a cell
    (default: the figure). Columns blank for every system are left out, except the first."""
    cell = cell or (lambda scores, key: _format_figure(scores.get(key)))
    kept = [(key, header) for i, (key, header) in enumerate(columns)
            if i == 0 or any(cell(scores, key) for scores in systems.values())]
    rows = [[name, *(cell(scores, key) for key, _ in kept)] for name, scores in systems.items()]
    return ["System", *(header for _, header in kept)], rows


def _split_tables(systems: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(caption, headers, rows) of the tables that follow the main results table."""
    tables = []
    if _has(systems, "ci"):
        tables.append(("95% bootstrap intervals", *_table_cells(
            systems, TABLE_COLUMNS[:6], lambda scores, key: _format_interval(scores.get("ci", {}).get(key)))))
    if _has(systems, "mean_over_references"):
        tables.append(("ROUGE F1 averaged over the references of each example (main table: best-matching reference)",
                       *_table_cells(systems, TABLE_COLUMNS[:4], lambda scores, key: _format_figure(
                           scores.get("mean_over_references", {}).get(key)))))
    if _has(systems, "rouge1_precision"):
        tables.append(("ROUGE precision (P) and recall (R), best-matching reference",
                       *_table_cells(systems, PR_COLUMNS)))
    if _has(systems, "length"):
        tables.append(("Lengths (words) and n-gram ratios (novel: absent from the source; repeated: within the output)",
                       *_table_cells(systems, TEXT_COLUMNS)))
    return tables


def _has(systems: Mapping[str, Mapping[str, Any]], key: str) -> bool:
    return any(key in scores for scores in systems.values())


def _split_section(split: str, systems: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Markdown lines of one split: the results table, intervals, mean over references, precision /
    recall, length and n-gram statistics, and the sacrebleu signatures (each when recorded)."""
    lines = [f"## Split: {split}", ""]
    lines.append("| System | " + " | ".join(header for _, header in TABLE_COLUMNS) + " |")
    lines.append("|---|" + "---:|" * len(TABLE_COLUMNS))
    for name, scores in systems.items():
        cells = [_format_figure(scores.get(key)) for key, _ in TABLE_COLUMNS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    for caption, headers, rows in _split_tables(systems):
        lines += [f"{caption}:", "", "| " + " | ".join(headers) + " |", "|---|" + "---:|" * (len(headers) - 1)]
        lines += ["| " + " | ".join(row) + " |" for row in rows] + [""]
    for key, label in SIGNATURES:
        signatures = {name: scores[key] for name, scores in systems.items() if scores.get(key)}
        if signatures:
            lines += [f"{label} signature (sacrebleu):", ""]
            lines.extend(f"- {name}: `{signature}`" for name, signature in signatures.items())
            lines.append("")
    return lines


def _significance_section(significance: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> list[str]:
    """Markdown lines of the paired bootstrap tests: difference, interval and p-value per metric."""
    lines = ["## Paired bootstrap tests", ""]
    for split, comparisons in significance.items():
        for pair, tests in comparisons.items():
            lines += [f"### {split}: {pair}", "", "| Metric | Difference | 95% interval | p-value |",
                      "|---|---:|---:|---:|"]
            for key, header in TABLE_COLUMNS:
                if key in tests:
                    test = tests[key]
                    lines.append(f"| {header} | {test['difference']:+.2f} | {_format_interval(test['ci'])} "
                                 f"| {test['p_value']:.4f} |")
            lines.append("")
    return lines


def _examples_section(predictions: Sequence[Mapping[str, Any]]) -> list[str]:
    """Markdown lines showing the first predictions next to their references."""
    lines = ["## Examples", ""]
    for i, record in enumerate(predictions[:N_EXAMPLES_SHOWN]):
        lines += [f"### {record.get('id', i)}", "", "**Prediction**", ""]
        lines += [_blockquote(str(record.get("summary", ""))), ""]
        references = record.get("references", record.get("reference", ""))
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

    if metrics.get("significance"):
        lines += _significance_section(metrics["significance"])

    facts = {
        key: value for key, value in metrics.items()
        if key not in ("versions", "significance") and not _is_split(value)
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


def write_scores_csv(path: str | Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Per-example figures as CSV, atomically: ``id, system`` then every figure (one row per example
    and system)."""
    header = ["id", "system", *(key for key in (rows[0] if rows else {}) if key not in ("id", "system"))]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([row.get(key, "") for key in header] for row in rows)
    _write_text_atomic(path, buffer.getvalue())


@dataclass
class Attention:
    """One example's attention for the report: ``pooling`` [P, H, T] and ``inter`` [H, P, P]
    (numpy arrays of the last inter-paragraph layer, real paragraphs and tokens only)."""

    example_id: str
    pooling: Any
    inter: Any


def _lengths(
    rows: Sequence[Mapping[str, Any]] | None, predictions: Sequence[Mapping[str, Any]] | None
) -> tuple[str, list[float], list[float]] | None:
    """(system, output lengths, reference lengths) for the length histogram: the first system of
    ``rows``, else the prediction records; None without either."""
    if rows:
        system = rows[0]["system"]
        chosen = [row for row in rows if row["system"] == system]
        return system, [row["length"] for row in chosen], [row["reference_length"] for row in chosen]
    if predictions:
        references = [r.get("references", r.get("reference", "")) for r in predictions]
        references = [[ref] if isinstance(ref, str) else list(ref) for ref in references]
        return ("model", [len(str(r.get("summary", "")).split()) for r in predictions],
                [sum(len(x.split()) for x in refs) / max(len(refs), 1) for refs in references])
    return None


def _html_table(headers: Sequence[str], rows: Sequence[Sequence[str]], caption: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    caption = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _img(figure: Any, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{plots.to_base64_png(figure)}">'


_CSS = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
        "table{border-collapse:collapse;margin:1em 0}caption{text-align:left;font-style:italic;padding:.3em 0}"
        "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}td:first-child,th:first-child"
        "{text-align:left}blockquote{border-left:3px solid #ccc;margin:.5em 0;padding-left:1em}"
        "code{font-size:90%}img{max-width:100%}")


def render_html(
    metrics: Mapping[str, Any],
    predictions: Sequence[Mapping[str, Any]] | None = None,
    *,
    rows: Sequence[Mapping[str, Any]] | None = None,
    curves_csv: str | Path | None = None,
    attention: Sequence[Attention] = (),
) -> str:
    """A self-contained HTML report: the tables of :func:`render_markdown` and, as base64 PNG,
    score bars with intervals, output vs reference lengths, training curves (``curves_csv``: a
    Lightning ``csv/metrics.csv``) and attention heatmaps."""
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>hiersum evaluation report</title>",
             f"<style>{_CSS}</style></head><body><h1>hiersum evaluation report</h1>"]
    for split, systems in metrics.items():
        if not _is_split(systems):
            continue
        parts.append(f"<h2>Split: {html.escape(split)}</h2>")
        parts.append(_html_table(*_table_cells(systems, TABLE_COLUMNS), "Scores (ROUGE F1: best-matching reference)"))
        for caption, headers, table_rows in _split_tables(systems):
            parts.append(_html_table(headers, table_rows, caption))
        for key, label in SIGNATURES:
            signatures = {name: scores[key] for name, scores in systems.items() if scores.get(key)}
            if signatures:
                items = "".join(f"<li>{html.escape(n)}: <code>{html.escape(v)}</code></li>"
                                for n, v in signatures.items())
                parts.append(f"<p>{label} signature (sacrebleu):</p><ul>{items}</ul>")
        parts.append(_img(plots.metric_bars_figure(systems), f"scores of {split}"))
    lengths = _lengths(rows, predictions)
    if lengths:
        parts += ["<h2>Lengths</h2>", _img(plots.length_figure(lengths[1], lengths[2], label=lengths[0]), "lengths")]
    if curves_csv and Path(curves_csv).is_file():
        figure = plots.curves_figure(plots.read_curves(curves_csv))
        if figure is not None:
            parts += [f"<h2>Training</h2><p>From <code>{html.escape(str(curves_csv))}</code>.</p>",
                      _img(figure, "training curves")]
    if attention:
        parts.append("<h2>Attention (last inter-paragraph layer)</h2>")
        parts += [_img(plots.attention_figure(a.pooling, a.inter, title=a.example_id), f"attention {a.example_id}")
                  for a in attention]
    if metrics.get("significance"):
        parts.append("<h2>Paired bootstrap tests</h2>")
    for split, comparisons in (metrics.get("significance") or {}).items():
        for pair, tests in comparisons.items():
            table_rows = [[header, f"{tests[key]['difference']:+.2f}", _format_interval(tests[key]["ci"]),
                           f"{tests[key]['p_value']:.4f}"] for key, header in TABLE_COLUMNS if key in tests]
            parts.append(_html_table(["Metric", "Difference", "95% interval", "p-value"], table_rows,
                                     f"{split}: {pair}"))
    facts = {key: value for key, value in metrics.items()
             if key not in ("versions", "significance") and not _is_split(value)}
    if facts:
        items = "".join(f"<li>{html.escape(str(k))}: <code>{html.escape(json.dumps(v, default=_json_default))}"
                        "</code></li>" for k, v in facts.items())
        parts.append(f"<h2>Run</h2><ul>{items}</ul>")
    versions = metrics.get("versions") or library_versions()
    items = "".join(f"<li>{html.escape(k)}: {html.escape(str(v))}</li>" for k, v in versions.items())
    parts.append(f"<h2>Library versions</h2><ul>{items}</ul>")
    if predictions:
        parts.append("<h2>Examples</h2>")
        for i, record in enumerate(predictions[:N_EXAMPLES_SHOWN]):
            references = record.get("references", record.get("reference", ""))
            references = [references] if isinstance(references, str) else list(references)
            parts.append(f"<h3>{html.escape(str(record.get('id', i)))}</h3><p><b>Prediction</b></p>"
                         f"<blockquote>{html.escape(str(record.get('summary', '')))}</blockquote>")
            parts += [f"<p><b>Reference {j + 1}</b></p><blockquote>{html.escape(str(r))}</blockquote>"
                      for j, r in enumerate(references)]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(
    run_dir: str | Path,
    metrics: dict,
    predictions: list[dict] | None = None,
    *,
    rows: Sequence[Mapping[str, Any]] | None = None,
    curves_csv: str | Path | None = None,
    attention: Sequence[Attention] = (),
) -> dict[str, Path]:
    """Write ``metrics.json``, ``report.md``, ``report.html``, and when given ``predictions.jsonl``
    and ``scores.csv`` (``rows``: per-example figures, see :mod:`hiersum.evaluation.scoring`).

    ``curves_csv``: the Lightning CSV log whose curves the HTML report draws (default
    ``<run_dir>/csv/metrics.csv`` when it exists). Returns the written paths under the keys
    ``"metrics"``, ``"report"``, ``"html"``, ``"predictions"``, ``"scores"``.
    """
    run_dir = Path(run_dir)
    paths = {"metrics": run_dir / "metrics.json", "report": run_dir / "report.md", "html": run_dir / "report.html"}
    if curves_csv is None and (run_dir / "csv" / "metrics.csv").is_file():
        curves_csv = run_dir / "csv" / "metrics.csv"
    write_json_atomic(paths["metrics"], metrics)
    _write_text_atomic(paths["report"], render_markdown(metrics, predictions))
    _write_text_atomic(paths["html"], render_html(metrics, predictions, rows=rows, curves_csv=curves_csv,
                                                  attention=attention))
    if predictions is not None:
        paths["predictions"] = run_dir / "predictions.jsonl"
        write_predictions(paths["predictions"], predictions)
    if rows:
        paths["scores"] = run_dir / "scores.csv"
        write_scores_csv(paths["scores"], rows)
    return paths
