"""``hiersum average-checkpoints`` (alias ``hiersum-average-checkpoints``): average the weights of several
checkpoints into a new one (:func:`hiersum.commands.average_checkpoints.average`).

Examples::

    hiersum average-checkpoints outputs/train/<run> --top-k 3        # the run's 3 best checkpoints
    hiersum average-checkpoints a.ckpt b.ckpt c.ckpt --output avg.ckpt

Exit status 2 with a one-line message for a usage error (a bad argument, checkpoints that cannot be
averaged, an output that is one of the inputs).
"""

from __future__ import annotations

from hiersum.cli.common import ArgumentParser, usage_errors

PROG = "hiersum-average-checkpoints"


def main(argv: list[str] | None = None, *, prog: str = PROG) -> None:
    """Run the action on ``argv`` (default: the process's command line) as command ``prog``."""
    parser = ArgumentParser(prog=prog, description="Average the weights of several checkpoints into a new one.")
    parser.add_argument("inputs", nargs="+", help="a run directory, or the checkpoints to average")
    parser.add_argument("--top-k", type=int, default=None, help="with a run directory: its K best (default: all)")
    parser.add_argument("--output", default=None, help="the averaged checkpoint (default: <run>/checkpoints/"
                                                       "averaged-top<K>.ckpt, or averaged.ckpt beside the first)")
    args = parser.parse_args(argv)
    with usage_errors(prog):
        from hiersum.commands.average_checkpoints import AverageConfig, average

        output = average(AverageConfig(inputs=args.inputs, top_k=args.top_k, output=args.output))
    print(f"averaged checkpoint: {output}")


if __name__ == "__main__":
    main()
