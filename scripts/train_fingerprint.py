"""The fingerprint of a few training steps of the default model on this machine: run it on two machines, or
under two settings, and compare (docs/experiments.md#where-the-figures-come-from).

    python scripts/train_fingerprint.py --threads 1 --save here.pt               # 40 steps of model=small
    MKL_CBWR=COMPATIBLE python scripts/train_fingerprint.py --threads 1 --against here.pt
    python scripts/train_fingerprint.py --model tiny --steps 3                    # seconds
    python scripts/train_fingerprint.py --threads 1 --steps 300 --batch-tokens 6144 --lr-offset 0 --epochs

The steps: the model of ``conf/model/<--model>.yaml`` and ``optim=noam`` (their values are the config defaults),
label-smoothed loss as ``hiersum train``, from ``torch.manual_seed(1234)``, on ``--steps`` token-budget batches of
``--batch-tokens`` of the sample corpus's train split (its own tokenizer and paragraph selection, as ``data=sample``)
spread evenly over the size order, one batch a step (``--epochs``: all of them in one fixed shuffled order, again
and again, as a run's epochs); the noam schedule starts at step ``--lr-offset`` (300: its peak, so that a few steps
move the weights as much as the middle of a run does; 0: the run's first steps, as ``hiersum train``).

Prints one JSON object: ``machine`` (what ``metrics.json`` records), ``environment`` (the variables that pick or pin
the CPU's code paths, where set), ``threads``, ``deterministic``, ``losses`` (each step's, exact), ``weights_sha256``
(the bytes of the final weights: two runs with the same one computed the same steps bit for bit), ``seconds`` and
``cpu_seconds`` (of the steps alone; this process's CPU time). ``--save`` writes each step's loss and the weights
after steps 1, 2, 5, 10, 20, ... and the last; ``--against`` a file so written gives ``relative_difference``: per
step saved in both, ``|w - w_other| / |w_other|`` over all weights.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hiersum.config import DataConfig, ModelConfig, TokenizerConfig  # noqa: E402
from hiersum.config.optim import OptimConfig  # noqa: E402
from hiersum.data.batching import collate, make_token_budget_batches  # noqa: E402
from hiersum.data.corpus_splits import read_split  # noqa: E402
from hiersum.data.corpus_tokenizer import prepare_tokenizer  # noqa: E402
from hiersum.data.sample_location import sample_dir  # noqa: E402
from hiersum.data.schema import Batch  # noqa: E402
from hiersum.data.selection import encode_examples, encoding_config  # noqa: E402
from hiersum.evaluation.machine import machine_description  # noqa: E402
from hiersum.training.module import HierSumModule, module_hparams  # noqa: E402

CODE_PATH_VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA",
                       "OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""The environment variables that choose the CPU kernels or their threads (recorded where set)."""
SEED = 1234


def model_config(name: str) -> ModelConfig:
    """``conf/model/<name>.yaml`` as a :class:`ModelConfig` (its ``defaults`` list dropped)."""
    values = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "model" / f"{name}.yaml"))
    values.pop("defaults", None)
    return ModelConfig(**values)


def sample_batches(data: DataConfig, tokenizer: Any, steps: int, batch_tokens: int, epochs: bool) -> list[Batch]:
    """``steps`` token-budget batches of the train split: spread evenly over the size order, or (``epochs``) all of
    them in one shuffled order (``random.Random(0)``), again and again."""
    examples = read_split(Path(data.path) / "train.jsonl")
    encoded = encode_examples(examples, tokenizer, encoding_config(data))
    groups = make_token_budget_batches(encoded, batch_tokens=batch_tokens, max_batch_size=data.max_batch_size)
    if epochs:
        order = list(range(len(groups)))
        random.Random(0).shuffle(order)
        picked = [groups[order[i % len(groups)]] for i in range(steps)]
    else:
        picked = [groups[round(i * (len(groups) - 1) / max(steps - 1, 1))] for i in range(steps)]
    ids = tokenizer.special
    return [collate([encoded[i] for i in group], pad_id=ids.pad, bos_id=ids.bos, eos_id=ids.eos,
                    max_paragraph_tokens=data.max_paragraph_tokens) for group in picked]


def weights(module: torch.nn.Module) -> torch.Tensor:
    """Every parameter, flattened into one vector (a copy)."""
    return torch.cat([p.detach().flatten() for p in module.parameters()])


def saved_step(step: int, steps: int) -> bool:
    """Steps whose weights ``--save`` keeps: 1, 2, 5, 10, 20, 50, 100, ... and the last."""
    return step == steps or any(step == m * 10 ** e for e in range(8) for m in (1, 2, 5))


def train_steps(args: argparse.Namespace) -> tuple[dict[str, Any], dict[int, torch.Tensor]]:
    """Run the steps; the report and the weights after the steps :func:`saved_step` keeps."""
    data = DataConfig(path=sample_dir(ROOT / "data"))
    tokenizer = prepare_tokenizer(TokenizerConfig(), data)
    batches = sample_batches(data, tokenizer, args.steps, args.batch_tokens, args.epochs)
    torch.manual_seed(SEED)
    module = HierSumModule(**module_hparams(model_config(args.model), OptimConfig(), data, tokenizer))
    optimizers = module.configure_optimizers()
    optimizer, scheduler = optimizers["optimizer"], optimizers["lr_scheduler"]["scheduler"]
    with warnings.catch_warnings():  # the schedule skips ahead before any update, on purpose
        warnings.filterwarnings("ignore", message=re.escape("Detected call of `lr_scheduler.step()` before"),
                                category=UserWarning)
        for _ in range(args.lr_offset):
            scheduler.step()
    losses: list[float] = []
    kept: dict[int, torch.Tensor] = {}
    wall, cpu = time.perf_counter(), time.process_time()
    for step, batch in enumerate(batches, 1):
        loss = module.loss(batch)[0]
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if saved_step(step, len(batches)):
            kept[step] = weights(module)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    report = {
        "machine": machine_description(), "torch": torch.__version__,
        "environment": {name: os.environ[name] for name in CODE_PATH_VARIABLES if name in os.environ},
        "threads": torch.get_num_threads(), "deterministic": torch.are_deterministic_algorithms_enabled(),
        "model": args.model, "steps": len(batches), "examples": sum(len(batch.ids) for batch in batches),
        "losses": losses, "weights_sha256": hashlib.sha256(kept[len(batches)].numpy().tobytes()).hexdigest(),
        "seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
    }
    return report, kept


def relative_difference(kept: dict[int, torch.Tensor], other: dict[int, torch.Tensor]) -> dict[str, float]:
    """``|w - w_other| / |w_other|`` for each step kept in both."""
    return {str(step): float((kept[step] - other[step]).norm() / other[step].norm().clamp(min=1e-30))
            for step in sorted(set(kept) & set(other))}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch-tokens", type=int, default=1536, help="token budget of a batch (default run: 6144)")
    parser.add_argument("--model", default="small", help="a conf/model/ file (default: small, the default run's)")
    parser.add_argument("--lr-offset", type=int, default=300, help="steps of the noam schedule skipped")
    parser.add_argument("--epochs", action="store_true",
                        help="every batch of the split in one shuffled order, repeated, as epochs of a run")
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    parser.add_argument("--deterministic", action="store_true", help="torch.use_deterministic_algorithms(True)")
    parser.add_argument("--save", type=Path, help="write the losses and the kept weights here (torch.save)")
    parser.add_argument("--against", type=Path, help="a file of --save to compare the weights with")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.deterministic:
        torch.use_deterministic_algorithms(True)
    report, kept = train_steps(args)
    if args.save:
        torch.save({"losses": report["losses"], "weights": kept}, args.save)
    if args.against:
        report["relative_difference"] = relative_difference(kept, torch.load(args.against)["weights"])
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
