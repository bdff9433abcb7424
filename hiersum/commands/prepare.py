"""``hiersum prepare``: tokenize the splits of a corpus once into the prepared-data cache.

Examples::

    hiersum prepare data=multinews data.path=/data/multi-news
    hiersum prepare data=wikisum data.path=/data/ranked_wikisum tokenizer=official_spm tokenizer.path=spm.model
    hiersum prepare data=jsonl data.path=/data/corpus data.on_error=skip splits=[train,validation]

Takes the ``data``, ``tokenizer`` and ``model`` groups of ``hiersum train``: the same options give the
same prepared folders, which ``hiersum train`` and ``hiersum evaluate`` then find instead of preparing
them (they prepare what is missing themselves). Prints each split's folder, example count and the
records left out. Exit status 2 with a one-line message for a usage error (a missing split, a
malformed record with ``data.on_error=fail``). The work is :mod:`hiersum.data.prepared`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from hiersum.commands.common import count_skipped
from hiersum.commands.composed import command_config
from hiersum.config import PrepareConfig
from hiersum.data.corpus_splits import DATA_ERRORS, CorpusSplits, existing_split_files
from hiersum.data.corpus_tokenizer import prepare_tokenizer
from hiersum.data.overwrite import refuse_overwriting_inputs
from hiersum.model.encoder_registry import run_tokenizer_config

USAGE = "hiersum prepare [data=FORMAT data.path=DIR] [splits=[train,validation,test]]"


def prepare(cfg: PrepareConfig | DictConfig) -> dict[str, Any]:
    """Prepare (or find prepared) the tokenizer and ``cfg.splits``; write ``data_errors.jsonl`` in the run
    directory when records were left out; return ``{split: {folder, examples, errors}}``. ``cfg``: the typed
    config, or the composed Hydra config it is converted from."""
    cfg = command_config(cfg, PrepareConfig, usage=USAGE)
    run_dir = Path(cfg.paths["output_dir"])
    inputs = {"tokenizer.path": cfg.tokenizer.path, **existing_split_files(cfg.data, cfg.splits)}
    refuse_overwriting_inputs({DATA_ERRORS: run_dir / DATA_ERRORS}, inputs)
    tokenizer = prepare_tokenizer(run_tokenizer_config(cfg.tokenizer, cfg.model), cfg.data)
    splits = CorpusSplits(cfg.data, tokenizer, cfg.model)
    splits.prepare(cfg.splits)
    errors_file = splits.write_errors(run_dir)
    report = {split: {"folder": str(prepared.folder), "examples": len(prepared), "errors": prepared.n_errors}
              for split, prepared in splits.prepared.items()}
    for split, entry in report.items():
        print(f"{split}: {entry['examples']} examples, {entry['errors']} records left out: {entry['folder']}")
    skipped = count_skipped({}, errors_file)
    if skipped:
        print(skipped)
    return report
