"""``hiersum import-hiersumm``: convert an official hiersumm checkpoint into a hiersum checkpoint.

Example::

    hiersum import-hiersumm --checkpoint model_step_500000.pt --output official.ckpt \\
        --tokenizer spm9998_3.model
    hiersum evaluate checkpoint=official.ckpt data=wikisum data.path=/data/ranked_wikisum \\
        experiment=wikisum_paper

The output is loaded by ``hiersum evaluate`` / ``hiersum summarize`` like a trained checkpoint.
``--tokenizer`` (the SentencePiece ``.model`` of the release, a ``tokenizer.json`` or an HF
tokenizer directory) is stored inside it; without it no tokenizer is stored and the commands
cannot turn ids into text (import again with ``--tokenizer``). Exit status 2 with a one-line message
for a usage error (a bad argument, a missing or unreadable checkpoint or tokenizer).
"""

from __future__ import annotations

from pathlib import Path

import torch

from hiersum.checkpoints.official import hiersum_checkpoint, official_model, read_official_checkpoint
from hiersum.data.overwrite import refuse_overwriting_inputs
from hiersum.data.tokenizer import load_tokenizer


def import_checkpoint(checkpoint: Path, output: Path, tokenizer_path: Path | None = None) -> Path:
    """Convert ``checkpoint`` and write ``output``; returns ``output``."""
    refuse_overwriting_inputs({"--output": output}, {"--checkpoint": checkpoint, "--tokenizer": tokenizer_path})
    official = read_official_checkpoint(checkpoint)
    model = official_model(checkpoint, official)
    tokenizer = load_tokenizer(tokenizer_path) if tokenizer_path else None
    converted = hiersum_checkpoint(model, official["opt"], tokenizer=tokenizer)
    output.parent.mkdir(parents=True, exist_ok=True)
    torch.save(converted, output)
    return output
