"""Write one-sentence "systems" for a SciTLDR split: the first or the last source sentence.

    python scripts/sentence_predictions.py ../shared/data/scitldr-a/dev.jsonl --which first > first_sentence.jsonl

Each output line is ``{"id", "summary"}`` (the format ``hiersum evaluate predictions=`` reads).
"""

from __future__ import annotations

import argparse
import json
import sys

from hiersum.data.formats.scitldr import iter_scitldr
from hiersum.data.schema import RecordError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("split", help="a SciTLDR JSONL file")
    parser.add_argument("--which", choices=("first", "last"), default="first")
    args = parser.parse_args(argv)
    for item in iter_scitldr(args.split):
        if isinstance(item, RecordError):
            print(item, file=sys.stderr)
            return 1
        sentences = item.documents[0]
        summary = sentences[0] if args.which == "first" else sentences[-1]
        print(json.dumps({"id": item.id, "summary": summary}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
