"""``hiersum make-sample`` (alias ``hiersum-make-sample``): write the synthetic sample corpus (native JSONL)
deterministically (:func:`hiersum.data.sample_generator.write_sample_corpus`).

Example::

    hiersum make-sample --output data/sample          # the committed corpus, byte for byte
"""

from __future__ import annotations

from hiersum.cli.common import ArgumentParser
from hiersum.data.sample_generator import DEFAULT_SIZES, write_sample_corpus  # no torch: a --help stays fast

PROG = "hiersum-make-sample"


def main(argv: list[str] | None = None, *, prog: str = PROG) -> None:
    """Run the action on ``argv`` (default: the process's command line) as command ``prog``."""
    parser = ArgumentParser(prog=prog, description="Write the synthetic sample corpus deterministically.")
    parser.add_argument("--output", default="data/sample", help="output directory (default: data/sample)")
    for split, n_examples in DEFAULT_SIZES.items():
        parser.add_argument(f"--{split}", type=int, default=n_examples, metavar="N",
                            help=f"number of {split} examples (default {n_examples})")
    args = parser.parse_args(argv)
    sizes = {split: getattr(args, split) for split in DEFAULT_SIZES}
    for split, n_examples in sizes.items():
        if n_examples < 0:
            parser.error(f"--{split} must be >= 0, got {n_examples}")
    for split, path in write_sample_corpus(args.output, sizes=sizes).items():
        print(f"{split}: {sizes[split]} examples -> {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
