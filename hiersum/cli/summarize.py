"""``hiersum-summarize``: summarize documents with a checkpoint, resumably.

Example::

    hiersum-summarize checkpoint=run/checkpoints/last.ckpt input=in.jsonl output=out.jsonl

Inputs, outputs, resuming and malformed records: :mod:`hiersum.decoding.summarize`. Exit status: 0
all records summarized, 3 some records refused, 2 usage error (missing checkpoint, unreadable input,
bad option) with a one-line message.
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from hiersum.cli.common import CONFIG_DIR, run_entry_point, task
from hiersum.decoding.summarize import SummarizeResult, summarize

__all__ = ["EXIT_RECORD_ERRORS", "SummarizeResult", "main", "summarize"]

PROG = "hiersum-summarize"
EXIT_RECORD_ERRORS = 3
"""Exit status when some input records were refused (the others are summarized)."""



@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="summarize")
def _run(cfg: DictConfig) -> None:
    with task(PROG):
        result = summarize(cfg)
    if result.errors:
        sys.exit(EXIT_RECORD_ERRORS)


def main() -> None:
    run_entry_point(_run, PROG)


if __name__ == "__main__":
    main()
