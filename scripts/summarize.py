"""``python scripts/summarize.py ...``: a one-line wrapper of ``hiersum summarize`` (same options, same output),
kept for the scripts that call it by this path.

    python scripts/summarize.py checkpoint=PATH input=IN.jsonl output=OUT.jsonl
"""

import sys

from hiersum.cli.main import run_action

if __name__ == "__main__":
    run_action("summarize", sys.argv[1:], prog="hiersum-summarize")
