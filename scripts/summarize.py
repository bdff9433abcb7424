"""``python scripts/summarize.py ...``: a one-line wrapper of ``hiersum summarize`` (same options, same output),
kept for the scripts that call it by this path.

    python scripts/summarize.py checkpoint=PATH input=IN.jsonl output=OUT.jsonl
"""

from hiersum.cli.summarize import main

if __name__ == "__main__":
    main()
