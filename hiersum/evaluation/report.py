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
        "sentence_splitter": "nltk.punkt",   # lead-3, the oracle, LexRank and ROUGE-Lsum's sentences
    }

(every key of a system is listed in :mod:`hiersum.evaluation.scoring`: precision / recall, chrF,
``mean_over_references``, ``ci``, lengths, n-gram ratios; baselines ``oracle`` and ``lexrank`` sit
beside ``lead``; paired tests under the top-level ``significance``: ``{split: {"A vs B": {metric:
{"difference", "ci", "p_value"}}}}``).

A top-level entry is a split when its value is a dict of systems, each a dict holding at
least one ROUGE figure. :func:`build_report` turns the metrics into one :class:`Report` (sections of
tables, item lists, quotes and figures), which :func:`render_markdown` and :func:`render_html` render
(Markdown leaves the figures out). ``report.html`` is self-contained: its plots (:mod:`hiersum.evaluation.plots`) are
embedded as base64 PNG. Every file is written atomically (:func:`hiersum.atomic.write_atomically`: a temporary
file in the same folder, then ``os.replace``), so a crash never leaves a half-written report behind.
"""

from __future__ import annotations

import csv
import functools
import html
import importlib.metadata
import io
import json
import os
import platform
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hiersum.atomic import write_text_atomically
from hiersum.evaluation import plots
from hiersum.evaluation.metrics import NGRAM_ORDERS, ROUGE_TYPES
from hiersum.evaluation.report_files import REPORT_FILES

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
VERSIONED_PACKAGES = ("rouge-score", "sacrebleu", "torch", "torchmetrics", "numpy", "scipy", "matplotlib")
SIGNATURES = (("bleu_signature", "BLEU"), ("chrf_signature", "chrF"))
N_EXAMPLES_SHOWN = 3


@dataclass
class Attention:
    """One example's attention for the report: ``pooling`` [P, H, T] and ``inter`` [H, P, P]
    (numpy arrays of the last inter-paragraph layer, real paragraphs and tokens only)."""

    example_id: str
    pooling: Any
    inter: Any


@dataclass(frozen=True)
class Table:
    """Rows of formatted cells under ``headers`` (first column: a name, the others right-aligned)."""

    headers: Sequence[str]
    rows: Sequence[Sequence[str]]
    caption: str = ""


@dataclass(frozen=True)
class Items:
    """A list of ``name: value`` items under an optional lead-in line; ``code``: values set as code."""

    items: Sequence[tuple[str, str]]
    title: str = ""
    code: bool = False


@dataclass(frozen=True)
class Quote:
    """A labelled passage (a prediction, a reference)."""

    label: str
    text: str


@dataclass(frozen=True)
class Figure:
    """A plot, drawn only by the HTML rendering (``draw`` returns a matplotlib figure); ``source``:
    the file it is drawn from, named above it."""

    alt: str
    draw: Callable[[], Any]
    source: str = ""


Block = Table | Items | Quote | Figure


@dataclass
class Section:
    """A headed part of the report: its blocks in order, then its subsections (one level down)."""

    heading: str
    blocks: list[Block] = field(default_factory=list)
    subsections: list[Section] = field(default_factory=list)


@dataclass
class Report:
    title: str
    sections: list[Section]


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


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as indented UTF-8 JSON to ``path``, atomically (paths become strings)."""
    text = json.dumps(obj, indent=2, ensure_ascii=False, default=_json_default)
    write_text_atomically(path, text + "\n")


def write_predictions(path: str | Path, records: Iterable[dict]) -> None:
    """Write ``records`` (e.g. ``{"id", "summary", "reference"}``) as JSONL, atomically."""
    lines = [json.dumps(record, ensure_ascii=False, default=_json_default) for record in records]
    write_text_atomically(path, "".join(line + "\n" for line in lines))


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


def _split_tables(systems: Mapping[str, Mapping[str, Any]]) -> list[Table]:
    """The tables of a split: the results (every column of :data:`TABLE_COLUMNS`), then intervals,
    mean over references, precision / recall, and length and n-gram statistics (each when recorded)."""
    main = ["System", *(header for _, header in TABLE_COLUMNS)]
    tables = [Table(main, [[name, *(_format_figure(scores.get(key)) for key, _ in TABLE_COLUMNS)]
                           for name, scores in systems.items()])]
    if _has(systems, "ci"):
        tables.append(Table(*_table_cells(
            systems, TABLE_COLUMNS[:6], lambda scores, key: _format_interval(scores.get("ci", {}).get(key))),
            "95% bootstrap intervals"))
    if _has(systems, "mean_over_references"):
        tables.append(Table(*_table_cells(systems, TABLE_COLUMNS[:4], lambda scores, key: _format_figure(
            scores.get("mean_over_references", {}).get(key))),
            "ROUGE F1 averaged over the references of each example (main table: best-matching reference)"))
    if _has(systems, "rouge1_precision"):
        tables.append(Table(*_table_cells(systems, PR_COLUMNS),
                            "ROUGE precision (P) and recall (R), best-matching reference"))
    if _has(systems, "length"):
        tables.append(Table(*_table_cells(systems, TEXT_COLUMNS), "Lengths (words) and n-gram ratios "
                            "(novel: absent from the source; repeated: within the output)"))
    return tables


def _has(systems: Mapping[str, Mapping[str, Any]], key: str) -> bool:
    return any(key in scores for scores in systems.values())


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
        references = [_references(r) for r in predictions]
        return ("model", [len(str(r.get("summary", "")).split()) for r in predictions],
                [sum(len(x.split()) for x in refs) / max(len(refs), 1) for refs in references])
    return None


def _references(record: Mapping[str, Any]) -> list[str]:
    references = record.get("references", record.get("reference", ""))
    return [references] if isinstance(references, str) else list(references)


def _split_section(split: str, systems: Mapping[str, Mapping[str, Any]]) -> Section:
    """One split: its tables, the sacrebleu signatures and (HTML) the score bars."""
    section = Section(f"Split: {split}", list(_split_tables(systems)))
    for key, label in SIGNATURES:
        signatures = [(name, str(scores[key])) for name, scores in systems.items() if scores.get(key)]
        if signatures:
            section.blocks.append(Items(signatures, f"{label} signature (sacrebleu):", code=True))
    section.blocks.append(Figure(f"scores of {split}", functools.partial(plots.metric_bars_figure, systems)))
    return section


def _significance_section(significance: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> Section:
    """The paired bootstrap tests: difference, interval and p-value per metric, one table per pair."""
    section = Section("Paired bootstrap tests")
    for split, comparisons in significance.items():
        for pair, tests in comparisons.items():
            rows = [[header, f"{tests[key]['difference']:+.2f}", _format_interval(tests[key]["ci"]),
                     f"{tests[key]['p_value']:.4f}"] for key, header in TABLE_COLUMNS if key in tests]
            section.subsections.append(
                Section(f"{split}: {pair}", [Table(["Metric", "Difference", "95% interval", "p-value"], rows)]))
    return section


def _examples_section(predictions: Sequence[Mapping[str, Any]]) -> Section:
    """The first predictions next to their references."""
    section = Section("Examples")
    for i, record in enumerate(predictions[:N_EXAMPLES_SHOWN]):
        references = _references(record)
        quotes = [Quote("Prediction", str(record.get("summary", "")))]
        quotes += [Quote("Reference" if len(references) == 1 else f"Reference {j + 1}", str(reference))
                   for j, reference in enumerate(references)]
        section.subsections.append(Section(str(record.get("id", i)), list(quotes)))
    return section


def _fact(value: Any) -> str:
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=_json_default)
    return str(value)


THROUGHPUT_COLUMNS = {
    "train/device/items_per_sec": ("real tokens/s", "{:,.0f}", 1.0),
    "train/device/samples_per_sec": ("examples/s", "{:,.1f}", 1.0),
    "train/device/flops_per_sec": ("GFLOP/s (the model's, on real tokens)", "{:,.2f}", 1e-9),
    "train/device/mfu": ("MFU", "{:.1%}", 1.0),
}
"""The columns :class:`hiersum.training.callbacks.Throughput` logs that the report shows: label, format, scale."""


def throughput_items(curves_csv: str | Path, peak: Mapping[str, Any] | None = None) -> list[tuple[str, str]]:
    """(label, value) of each throughput figure of a Lightning CSV log: the median over its logged rows; then the
    peak MFU is measured against (``peak``: ``metrics["mfu_peak"]``, :meth:`hiersum.model.flops.Peak.as_dict`)."""
    values: dict[str, list[float]] = {}
    with open(curves_csv, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            for column in THROUGHPUT_COLUMNS:
                if row.get(column) not in (None, ""):
                    values.setdefault(column, []).append(float(row[column]))
    items = []
    for column, (label, form, scale) in THROUGHPUT_COLUMNS.items():
        if values.get(column):
            items.append((label, form.format(statistics.median(values[column]) * scale)))
    if items and peak:
        items.append(("MFU's peak", f"{peak['gflops']:,.1f} GFLOP/s per device ({peak['source']})"))
    return items


def build_report(
    metrics: Mapping[str, Any],
    predictions: Sequence[Mapping[str, Any]] | None = None,
    *,
    rows: Sequence[Mapping[str, Any]] | None = None,
    curves_csv: str | Path | None = None,
    attention: Sequence[Attention] = (),
) -> Report:
    """The report of ``metrics`` (layout in the module docstring).

    One section per split (results table: rows systems, columns ROUGE-1/2/L/Lsum F1, BLEU, chrF,
    perplexity, token accuracy, 2 decimals, blank where absent; the other tables when recorded; the
    sacrebleu signatures; score bars with intervals), output vs reference lengths (``rows``, else
    ``predictions``), training curves (``curves_csv``: a Lightning ``csv/metrics.csv``), attention
    heatmaps, the paired bootstrap tests, the other run facts (checkpoint, decoding settings, ...),
    library versions (``metrics["versions"]`` when recorded, else the installed ones), the machine
    (``metrics["machine"]``, :mod:`hiersum.evaluation.machine`) and, when
    ``predictions`` are given, the first few predictions next to their references.
    """
    sections = [_split_section(split, systems) for split, systems in metrics.items() if _is_split(systems)]
    lengths = _lengths(rows, predictions)
    if lengths:
        draw = functools.partial(plots.length_figure, lengths[1], lengths[2], label=lengths[0])
        sections.append(Section("Lengths", [Figure("lengths", draw)]))
    if curves_csv and Path(curves_csv).is_file():
        curves = plots.read_curves(curves_csv)
        blocks: list[Block] = []
        if plots.loss_curves(curves):
            blocks.append(Figure("training curves", functools.partial(plots.curves_figure, curves),
                                 source=str(curves_csv)))
        throughput = throughput_items(curves_csv, metrics.get("mfu_peak"))
        if throughput:
            blocks.append(Items(throughput, title="Throughput of the training steps (median of the logged windows):"))
        if blocks:
            sections.append(Section("Training", blocks))
    if attention:
        sections.append(Section("Attention (last inter-paragraph layer)", [
            Figure(f"attention {a.example_id}",
                   functools.partial(plots.attention_figure, a.pooling, a.inter, title=a.example_id))
            for a in attention
        ]))
    if metrics.get("significance"):
        sections.append(_significance_section(metrics["significance"]))
    facts = [(str(key), _fact(value)) for key, value in metrics.items()
             if key not in ("versions", "machine", "significance", "mfu_peak") and not _is_split(value)]
    if facts:
        sections.append(Section("Run", [Items(facts, code=True)]))
    versions = metrics.get("versions") or library_versions()
    sections.append(Section("Library versions", [Items([(str(k), str(v)) for k, v in versions.items()])]))
    if metrics.get("machine"):
        sections.append(Section("Machine", [Items([(str(k), _fact(v)) for k, v in metrics["machine"].items()])]))
    if predictions:
        sections.append(_examples_section(predictions))
    return Report("hiersum evaluation report", sections)


def render_markdown(report: Report) -> str:
    """``report.md``: every section and block but the figures (a section of figures alone is left out)."""
    lines = [f"# {report.title}", ""]
    for section in report.sections:
        lines += _markdown_section(section, level=2)
    return "\n".join(lines).rstrip("\n") + "\n"


def _markdown_section(section: Section, *, level: int) -> list[str]:
    body = [line for block in section.blocks if not isinstance(block, Figure) for line in _markdown_block(block)]
    for subsection in section.subsections:
        body += _markdown_section(subsection, level=level + 1)
    return [f"{'#' * level} {section.heading}", "", *body] if body else []


def _markdown_block(block: Block) -> list[str]:
    if isinstance(block, Table):
        lines = [f"{block.caption}:", ""] if block.caption else []
        lines += ["| " + " | ".join(block.headers) + " |", "|---|" + "---:|" * (len(block.headers) - 1)]
        return lines + ["| " + " | ".join(row) + " |" for row in block.rows] + [""]
    if isinstance(block, Items):
        lines = [block.title, ""] if block.title else []
        lines += [f"- {name}: `{value}`" if block.code else f"- {name}: {value}" for name, value in block.items]
        return lines + [""]
    if isinstance(block, Quote):
        return [f"**{block.label}**", "", _blockquote(block.text), ""]
    raise TypeError(f"no Markdown for {type(block).__name__}")


_CSS = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
        "table{border-collapse:collapse;margin:1em 0}caption{text-align:left;font-style:italic;padding:.3em 0}"
        "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}td:first-child,th:first-child"
        "{text-align:left}blockquote{border-left:3px solid #ccc;margin:.5em 0;padding-left:1em}"
        "code{font-size:90%}img{max-width:100%}")


def render_html(report: Report) -> str:
    """``report.html``, self-contained: the sections of :func:`render_markdown` and the figures as
    base64 PNG."""
    title = html.escape(report.title)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>",
             f"<style>{_CSS}</style></head><body><h1>{title}</h1>"]
    for section in report.sections:
        parts += _html_section(section, level=2)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _html_section(section: Section, *, level: int) -> list[str]:
    parts = [f"<h{level}>{html.escape(section.heading)}</h{level}>", *map(_html_block, section.blocks)]
    for subsection in section.subsections:
        parts += _html_section(subsection, level=level + 1)
    return parts


def _html_block(block: Block) -> str:
    if isinstance(block, Table):
        head = "".join(f"<th>{html.escape(h)}</th>" for h in block.headers)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
                       for row in block.rows)
        caption = f"<caption>{html.escape(block.caption)}</caption>" if block.caption else ""
        return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    if isinstance(block, Items):
        items = "".join(f"<li>{html.escape(name)}: " + (f"<code>{html.escape(value)}</code>" if block.code
                                                         else html.escape(value)) + "</li>"
                        for name, value in block.items)
        return (f"<p>{html.escape(block.title)}</p>" if block.title else "") + f"<ul>{items}</ul>"
    if isinstance(block, Quote):
        return f"<p><b>{html.escape(block.label)}</b></p><blockquote>{html.escape(block.text)}</blockquote>"
    source = f"<p>From <code>{html.escape(block.source)}</code>.</p>" if block.source else ""
    image = plots.to_base64_png(block.draw())
    return f'{source}<img alt="{html.escape(block.alt)}" src="data:image/png;base64,{image}">'


def write_scores_csv(path: str | Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Per-example figures as CSV, atomically: ``id, system`` then every figure (one row per example
    and system)."""
    header = ["id", "system", *(key for key in (rows[0] if rows else {}) if key not in ("id", "system"))]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([row.get(key, "") for key in header] for row in rows)
    write_text_atomically(path, buffer.getvalue())


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
    paths = {key: run_dir / REPORT_FILES[key] for key in ("metrics", "report", "html")}
    if curves_csv is None and (run_dir / "csv" / "metrics.csv").is_file():
        curves_csv = run_dir / "csv" / "metrics.csv"
    write_json_atomic(paths["metrics"], metrics)
    report = build_report(metrics, predictions, rows=rows, curves_csv=curves_csv, attention=attention)
    write_text_atomically(paths["report"], render_markdown(report))
    write_text_atomically(paths["html"], render_html(report))
    if predictions is not None:
        paths["predictions"] = run_dir / REPORT_FILES["predictions"]
        write_predictions(paths["predictions"], predictions)
    if rows:
        paths["scores"] = run_dir / REPORT_FILES["scores"]
        write_scores_csv(paths["scores"], rows)
    return paths
