"""Batch summarization: the same program as ``hiersum-summarize``.

    python scripts/summarize.py checkpoint=PATH input=IN.jsonl output=OUT.jsonl
"""

from hiersum.cli.summarize import main

if __name__ == "__main__":
    main()
