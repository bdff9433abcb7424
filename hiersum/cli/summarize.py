"""``hiersum-summarize``: summarize a native JSONL file with a checkpoint.

Example::

    hiersum-summarize checkpoint=run/checkpoints/last.ckpt input=in.jsonl output=out.jsonl

Writes one JSON object (``id``, ``summary``) per valid input record, in input order,
batch by batch. A malformed line is reported (file, line, field, reason) and skipped;
the rest are summarized and the process then exits with status 1.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from hiersum.cli.common import CONFIG_DIR
from hiersum.config import DecodeConfig, register_configs
from hiersum.data.datamodule import selection_config
from hiersum.data.readers import iter_jsonl
from hiersum.data.schema import Example, RecordError
from hiersum.data.selection import encode_examples
from hiersum.evaluation import progress_bar, summarize_encoded
from hiersum.lit_module import load_checkpoint

log = logging.getLogger(__name__)
register_configs()


def summarize(cfg: DictConfig) -> int:
    """Summarize ``cfg.input`` into ``cfg.output``; return the number of malformed records."""
    module = load_checkpoint(cfg.checkpoint)
    tokenizer = module.tokenizer()
    decode: DecodeConfig = OmegaConf.to_object(cfg.decode)
    examples: list[Example] = []
    errors: list[RecordError] = []
    for item in iter_jsonl(cfg.input, require_summary=False):
        (errors if isinstance(item, RecordError) else examples).append(item)
    for error in errors:
        print(f"skipped malformed record: {error}", file=sys.stderr)
    encoded = encode_examples(examples, tokenizer, selection_config(module.data_config))
    results: list[dict | None] = [None] * len(encoded)
    written = 0
    output = Path(cfg.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "w", encoding="utf-8") as handle, progress_bar("summarizing") as bar:
        task = bar.add_task("summarize", total=len(encoded))
        for indices, summaries in summarize_encoded(
            module, encoded, tokenizer, decode, batch_tokens=cfg.batch_tokens, device=cfg.device
        ):
            for index, summary in zip(indices, summaries, strict=True):
                results[index] = {"id": summary.id, "summary": summary.summary}
            while written < len(results) and results[written] is not None:
                handle.write(json.dumps(results[written], ensure_ascii=False) + "\n")
                written += 1
            handle.flush()
            bar.advance(task, len(indices))
    print(f"wrote {written} summaries to {output}; {len(errors)} malformed records skipped", file=sys.stderr)
    return len(errors)


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="summarize")
def _run(cfg: DictConfig) -> None:
    if summarize(cfg):
        sys.exit(1)


def main() -> None:
    _run()


if __name__ == "__main__":
    main()
