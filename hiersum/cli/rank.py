"""``hiersum-rank``: rank the paragraphs of raw multi-document records (Liu & Lapata's preprocessing).

Examples::

    hiersum-rank ranker=outputs/train_ranker/RUN/checkpoints/ranker-best.pt input=raw.jsonl output=ranked.jsonl top_k=40
    hiersum-rank ranker=tfidf input=multi_news.jsonl output=ranked.jsonl top_k=20

Inputs, outputs, resuming and malformed records: :mod:`hiersum.decoding.rank`. Exit status: 0 all
records ranked, 3 some records refused, 2 usage error (missing ranker, unreadable input, bad option)
with a one-line message.
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from hiersum.cli.common import CONFIG_DIR, run_entry_point, task
from hiersum.cli.summarize import EXIT_RECORD_ERRORS
from hiersum.decoding.rank import rank

PROG = "hiersum-rank"


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="rank")
def _run(cfg: DictConfig) -> None:
    with task(PROG):
        result = rank(cfg)
    if result.errors:
        sys.exit(EXIT_RECORD_ERRORS)


def main() -> None:
    run_entry_point(_run, PROG)


if __name__ == "__main__":
    main()
