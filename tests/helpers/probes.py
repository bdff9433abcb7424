"""A callback that the training tests add to a run (``+callbacks.probe._target_=tests.helpers.probes.RunProbe
+callbacks.probe.folder=DIR``): each rank writes what it saw to ``DIR/rank<R>.json``, so a test can
check that an option acted (in process, or in the processes of a DDP run)."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch

SCORING_LIBRARIES = ("nltk", "rouge_score")
"""What the evaluation imports (~0.6 s of a start): a run has them loaded only once it scores."""


class RunProbe(pl.Callback):
    """Records the world size and rank, the scoring libraries loaded by the end of the fit, the encoder's class,
    whether the network copies (``model.copy_attention``), the first training batch's ``src`` and
    ``paragraph_graph`` shapes, how much that batch's graph moves the inter-paragraph attention (max absolute
    difference to an all-zero graph, i.e. to no graph bias), the steps trained and some Trainer settings."""

    def __init__(self, folder: str):
        self.folder = Path(folder)
        self.seen: dict[str, Any] = {}

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any,
                             batch_idx: int) -> None:
        if self.seen:
            return
        model = pl_module.model
        graph = batch.paragraph_graph
        self.seen = {"encoder": type(model.encoder).__name__, "copy_attention": model.copy_attention is not None,
                     "src_shape": list(batch.src.shape),
                     "graph_shape": None if graph is None else list(graph.shape), "graph_effect": None}
        if graph is not None:
            training = model.training
            model.eval()
            with torch.no_grad():
                biased = model.encode(batch.src, batch.src_mask, paragraph_graph=graph, return_attention=True)
                unbiased = model.encode(batch.src, batch.src_mask, paragraph_graph=torch.zeros_like(graph),
                                        return_attention=True)
            model.train(training)
            self.seen["graph_effect"] = max(float((a - b).abs().max()) for a, b in
                                            zip(biased.inter_attention, unbiased.inter_attention, strict=True))

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        record = {**self.seen, "world_size": trainer.world_size, "global_rank": trainer.global_rank,
                  "scoring_libraries": sorted(name for name in SCORING_LIBRARIES if name in sys.modules),
                  "global_step": trainer.global_step, "precision": trainer.precision,
                  "limit_train_batches": trainer.limit_train_batches, "val_check_interval": trainer.val_check_interval}
        (self.folder / f"rank{trainer.global_rank}.json").write_text(json.dumps(record), encoding="utf-8")


def probe_overrides(folder: Path) -> list[str]:
    """The overrides that add a :class:`RunProbe` writing to ``folder``."""
    return ["+callbacks.probe._target_=tests.helpers.probes.RunProbe", f"+callbacks.probe.folder={folder}"]


def read_probes(folder: Path) -> dict[int, dict[str, Any]]:
    """``{rank: record}`` of the ranks that wrote one."""
    return {int(path.stem[4:]): json.loads(path.read_text(encoding="utf-8")) for path in folder.glob("rank*.json")}


class StopAt(pl.Callback):
    """Stops the fit after training step ``step`` as a user or the machine would: ``how`` is ``ctrl-c`` (a
    KeyboardInterrupt), ``sigterm`` (the signal, sent to this process) or ``oom`` (the CPU allocator's error)."""

    def __init__(self, step: int, how: str):
        self.step, self.how = step, how

    def on_train_batch_end(self, trainer: pl.Trainer, *args: Any) -> None:
        if trainer.global_step != self.step:
            return
        if self.how == "ctrl-c":
            raise KeyboardInterrupt
        if self.how == "sigterm":
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory: "
                           "you tried to allocate 93898752 bytes")


class DataProbe(pl.Callback):
    """Records the example ids of every training batch a rank trains on, and saves its weights at the end of the
    fit: ``DIR/data<R>.json`` (``{"rank", "world_size", "global_step", "batches": [[id, ...], ...]}``) and
    ``DIR/weights<R>.pt`` (the model's ``state_dict``), R the global rank."""

    def __init__(self, folder: str):
        self.folder = Path(folder)
        self.batches: list[list[str]] = []

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any,
                             batch_idx: int) -> None:
        self.batches.append(list(batch.ids))

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        rank = trainer.global_rank
        torch.save(pl_module.model.state_dict(), self.folder / f"weights{rank}.pt")
        record = {"rank": rank, "world_size": trainer.world_size, "num_nodes": trainer.num_nodes,
                  "global_step": trainer.global_step, "batches": self.batches}
        (self.folder / f"data{rank}.json").write_text(json.dumps(record), encoding="utf-8")


def data_probe_overrides(folder: Path) -> list[str]:
    """The overrides that add a :class:`DataProbe` writing to ``folder``."""
    return ["+callbacks.data_probe._target_=tests.helpers.probes.DataProbe", f"+callbacks.data_probe.folder={folder}"]


class StartingLoss(pl.Callback):
    """Records the first training batch's loss twice: as the run's training step returned it, and under the network
    of ``source`` (a checkpoint or model directory, loaded as every command loads one) with the run's label
    smoothing; and the global step that batch began at: ``DIR/start.json``."""

    def __init__(self, folder: str, source: str):
        self.folder, self.source = Path(folder), source
        self.seen: dict[str, Any] = {}

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any,
                             batch_idx: int) -> None:
        from hiersum.checkpoints import load_network
        from hiersum.training.loss import teacher_forced_nll

        if self.seen:
            return
        network = load_network(self.source).model.to(pl_module.device)
        with torch.no_grad():
            out = network(batch.src, batch.src_mask, batch.tgt_in, paragraph_graph=batch.paragraph_graph,
                          layout=batch.layout)
            loss = teacher_forced_nll(out, batch.target_labels(), pl_module.optim_config.label_smoothing)
        self.seen = {"global_step": trainer.global_step, "source_loss": float(loss)}

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        self.seen.setdefault("run_loss", float(outputs["loss"]))

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "start.json").write_text(json.dumps(self.seen), encoding="utf-8")


def starting_loss_overrides(folder: Path, source: Path) -> list[str]:
    """The overrides that add a :class:`StartingLoss` of ``source`` writing to ``folder``."""
    return ["+callbacks.starting_loss._target_=tests.helpers.probes.StartingLoss",
            f"+callbacks.starting_loss.folder={folder}", f"+callbacks.starting_loss.source={source}"]
