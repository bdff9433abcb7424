"""``hiersum import-hiersumm`` (alias ``hiersum-import-hiersumm``): convert an official hiersumm checkpoint
into a hiersum checkpoint (:func:`hiersum.commands.import_hiersumm.import_checkpoint`).

Example::

    hiersum import-hiersumm --checkpoint model_step_500000.pt --output official.ckpt --tokenizer spm9998_3.model

Exit status 2 with a one-line message for a usage error (a bad argument, a missing or unreadable checkpoint
or tokenizer, an output that is one of the inputs).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hiersum.cli.common import ArgumentParser, usage_errors

PROG = "hiersum-import-hiersumm"


def parse_args(argv: list[str] | None = None, *, prog: str = PROG) -> argparse.Namespace:
    parser = ArgumentParser(prog=prog, description="Convert an official hiersumm checkpoint into a hiersum one.")
    parser.add_argument("--checkpoint", required=True, type=Path, help="official checkpoint (.pt)")
    parser.add_argument("--output", required=True, type=Path, help="hiersum checkpoint to write (.ckpt)")
    parser.add_argument("--tokenizer", type=Path, default=None,
                        help="SentencePiece .model, tokenizer.json or HF tokenizer directory to embed")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None, *, prog: str = PROG) -> None:
    """Run the action on ``argv`` (default: the process's command line) as command ``prog``."""
    args = parse_args(argv, prog=prog)
    with usage_errors(prog, OSError, ValueError):
        from hiersum.commands.import_hiersumm import import_checkpoint

        output = import_checkpoint(args.checkpoint, args.output, args.tokenizer)
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
