"""The figure of ``scripts/bench_length.py``: seconds and peak memory against source tokens, log-log, one line per
model and part (summary, training step), a dotted line of slope 1 (linear growth) for reference.

    python scripts/bench_length.py --repeats 1 > length.json
    python scripts/plot_length.py length.json --output docs/images/cost-against-length.png

Reads one or more of the bench's JSON outputs (their results joined; a later file's case replaces an earlier one's)
and prints the points it plotted as JSON.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

PANELS = (("seconds", "seconds"), ("peak_memory_mb", "peak memory (MB)"))
PART_STYLE = {"summarize": "-", "train": "--"}


def read_results(paths: list[Path]) -> dict[tuple[str, str], list[tuple[int, dict]]]:
    """The measured cases of the bench's JSON files by (model, part): [(source tokens, case)] in size order; cases
    that hit a limit or failed are left out."""
    cases: dict[tuple[str, str, int], dict] = {}
    for path in paths:
        for case in json.loads(path.read_text())["results"]:
            if "seconds" in case:
                cases[case["model"], case["part"], case["source_tokens"]] = case
    lines: dict[tuple[str, str], list[tuple[int, dict]]] = {}
    for (model, part, tokens), case in sorted(cases.items()):
        lines.setdefault((model, part), []).append((tokens, case))
    return lines


def plot(lines: dict[tuple[str, str], list[tuple[int, dict]]], output: Path) -> None:
    figure, axes = plt.subplots(1, len(PANELS), figsize=(11, 4.2))
    for axis, (key, label) in zip(axes, PANELS, strict=True):
        for (model, part), points in lines.items():
            tokens = [size for size, _ in points]
            axis.plot(tokens, [case[key] for _, case in points], PART_STYLE.get(part, ":"), marker="o",
                      label=f"{model} {part}")
        if key == "seconds" and lines:  # slope 1 through the first summary point: what linear growth looks like
            first_tokens, first = next(iter(lines.values()))[0]
            xs = [first_tokens, max(size for points in lines.values() for size, _ in points)]
            axis.plot(xs, [first["seconds"] * x / first_tokens for x in xs], ":", color="grey", label="slope 1")
        axis.set(xscale="log", yscale="log", xlabel="source tokens", ylabel=label)
        axis.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize="small")
    figure.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="JSON outputs of scripts/bench_length.py")
    parser.add_argument("--output", type=Path, required=True, help="the PNG to write")
    args = parser.parse_args(argv)
    lines = read_results(args.results)
    if not lines:
        raise SystemExit(f"{', '.join(map(str, args.results))}: no measured case (every case hit a limit or failed)")
    plot(lines, args.output)
    print(json.dumps({f"{model}/{part}": [[tokens, case["seconds"], case["peak_memory_mb"]] for tokens, case in points]
                      for (model, part), points in lines.items()}, indent=2))


if __name__ == "__main__":
    main()
