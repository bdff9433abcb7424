"""``hiersum-average-checkpoints``: average the weights of several checkpoints into a new one.

Examples::

    hiersum-average-checkpoints outputs/train/<run> --top-k 3        # the run's 3 best checkpoints
    hiersum-average-checkpoints a.ckpt b.ckpt c.ckpt --output avg.ckpt

With a run directory, the ranking is ModelCheckpoint's own (its ``best_k_models`` and monitored
metric, read from the newest checkpoint of ``<run>/checkpoints``), so train with
``callbacks.model_checkpoint.save_top_k=K`` (and e.g. ``monitor=val/rougeL mode=max``). The result is
an evaluation checkpoint (:mod:`hiersum.checkpoints.averaging`). Default output:
``<run>/checkpoints/averaged-top<K>.ckpt`` or ``averaged.ckpt`` beside the first checkpoint. Exit
status 2 with a one-line message for a usage error (a bad argument, checkpoints that cannot be
averaged).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hiersum.checkpoints.averaging import AverageError, average_checkpoints, ranked_checkpoints
from hiersum.cli.common import ArgumentParser, usage_errors
from hiersum.data.overwrite import refuse_overwriting_inputs

PROG = "hiersum-average-checkpoints"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", help="a run directory, or the checkpoints to average")
    parser.add_argument("--top-k", type=int, default=None, help="with a run directory: its K best (default: all)")
    parser.add_argument("--output", default=None, help="the averaged checkpoint (default: see the module doc)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    with usage_errors(PROG):
        if len(args.inputs) == 1 and Path(args.inputs[0]).is_dir():
            ranked, monitor = ranked_checkpoints(args.inputs[0])
            k = args.top_k or len(ranked)
            if k < 1:
                raise AverageError(f"--top-k must be >= 1, found {k}")
            paths = ranked[:k]
            output = args.output or Path(args.inputs[0]) / "checkpoints" / f"averaged-top{len(paths)}.ckpt"
            print(f"averaging the {len(paths)} best checkpoints by {monitor}: {', '.join(p.name for p in paths)}")
        else:
            paths = [Path(p) for p in args.inputs]
            output = args.output or paths[0].parent / "averaged.ckpt"
        refuse_overwriting_inputs({"--output": output}, {"the checkpoints to average": paths})
        print(f"averaged checkpoint: {average_checkpoints(paths, output)}")


if __name__ == "__main__":
    main()
