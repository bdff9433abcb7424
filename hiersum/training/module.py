"""LightningModule: label-smoothed NLL training (plus the optional pooling diversity penalty),
validation loss and perplexity; optimizer and LR schedule built from ``optim`` (Adam + noam by default)."""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from hydra.utils import instantiate
from torchmetrics.text import Perplexity

from hiersum.checkpoints.contents import (
    CHECKPOINT_EXTRA_KEY,
    checkpoint_tokenizer_json,
    data_config_from_hparams,
    tokenizer_from_json,
)
from hiersum.checkpoints.io import network_from_hparams
from hiersum.checkpoints.migration import optim_config
from hiersum.config import DataConfig, DecodeConfig, ModelConfig, OptimConfig, config_dict
from hiersum.data.extended_vocabulary import hide_copied_words
from hiersum.data.schema import IGNORE_INDEX, Batch
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.errors import TrainingDiverged
from hiersum.model.flops import FORWARD_AND_BACKWARD, training_flops
from hiersum.model.pooling import pooling_penalty
from hiersum.model.summarizer import TeacherForcedOutput
from hiersum.training.loss import coverage_loss, label_smoothed_nll, teacher_forced_nll
from hiersum.training.resume import repair_epoch_progress
from hiersum.training.schedule import NoamSchedule

__all__ = ["HierSumModule", "NoamSchedule", "label_smoothed_nll", "module_hparams"]


class HierSumModule(pl.LightningModule):
    """Trains :class:`HierSum`. Receives plain config values (saved as hyper-parameters)
    and builds the network itself, so a checkpoint alone rebuilds it
    (:func:`hiersum.checkpoints.io.load_network`).
    """

    def __init__(
        self,
        *,
        model: dict[str, Any],
        optim: dict[str, Any],
        vocab_size: int,
        pad_id: int,
        bos_id: int,
        eos_id: int,
        separator_id: int | None = None,
        unk_id: int | None = None,
        data: dict[str, Any] | None = None,
        decode: dict[str, Any] | None = None,
        tokenizer_json: str | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters(ignore=["tokenizer_json"])
        self.model = network_from_hparams(self.hparams)
        self.model_config = self.model.config
        self.flops_per_batch: int | None = None
        """The FLOPs of the current batch on its real tokens (:mod:`hiersum.model.flops`; None: not counted)."""
        # the network's complete config (a pretrained encoder's config, read from its directory): what checkpoints
        # record, so that they rebuild the network without the directory
        self.hparams["model"] = config_dict(self.model_config)
        self.optim_config = optim_config(optim)
        if self.optim_config.copy_oov_share and not self.model_config.copy_oov:
            raise ValueError("optim.copy_oov_share hides words as out-of-vocabulary ones, which only "
                             "model.copy_oov=true copies: set model.copy_oov=true or optim.copy_oov_share=0")
        self.tokenizer_json = tokenizer_json
        self.val_perplexity = Perplexity(ignore_index=IGNORE_INDEX)
        self.skipped_steps = 0
        """Updates skipped by the divergence guard in this run (saved in checkpoints)."""
        self.started_from: dict[str, str] | None = None
        """What a fine-tuning run started from (``init_from``: path and SHA-256, saved in checkpoints); None."""
        self._consecutive_skips = 0
        self._skipped_last_update = False
        self._batch_ids: list[str] = []

    def loss(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, int]:
        """(label-smoothed loss, logits [B, S, V], target token count); the loss is
        summed over target tokens and divided by their number (:func:`teacher_forced_nll`).
        """
        out = self.teacher_forced(batch)
        return self.smoothed_nll(batch, out), out.logits, batch.n_target_tokens

    def teacher_forced(self, batch: Batch, *, return_attention: bool = False) -> TeacherForcedOutput:
        """The network teacher-forced on ``batch`` (:meth:`HierSum.forward`, with the batch's paragraph graph and
        packed layout): logits [B, S, V] and the encoder's output."""
        return self.model(batch.src, batch.src_mask, batch.tgt_in, paragraph_graph=batch.paragraph_graph,
                          layout=batch.layout, return_attention=return_attention)

    def smoothed_nll(self, batch: Batch, out: TeacherForcedOutput) -> torch.Tensor:
        """The training loss of ``batch.tgt_out`` under the teacher-forced ``out``, per target token
        (:func:`teacher_forced_nll`: label smoothing on the generator's distribution)."""
        return teacher_forced_nll(out, batch.target_labels(), self.optim_config.label_smoothing)

    def on_train_batch_start(self, batch: Batch, batch_idx: int) -> None:
        """The FLOPs of this step on its real tokens, for :class:`hiersum.training.callbacks.Throughput`; and
        Lightning's epoch counter repaired where a resume left it behind (:func:`repair_epoch_progress`)."""
        self.flops_per_batch = training_flops(self.model, *self.host_masks(batch))
        repair_epoch_progress(self.trainer)

    @staticmethod
    def host_masks(batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """(``src_mask``, ``tgt_mask``) as ``collate`` made them, on the CPU: counting on them costs no device sync."""
        return batch.host_masks or (batch.src_mask, batch.tgt_mask)

    def on_validation_batch_start(self, batch: Batch, batch_idx: int, dataloader_idx: int = 0) -> None:
        """Validation is a forward pass: its FLOPs are a third of a training step's."""
        flops = training_flops(self.model, *self.host_masks(batch))
        self.flops_per_batch = None if flops is None else flops // FORWARD_AND_BACKWARD

    def training_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        """The loss (:meth:`smoothed_nll`, logged as ``train/loss``) plus the weighted pooling penalty
        (``model.pooling_penalty``) and coverage loss (``model.coverage``), each logged apart; with
        ``optim.copy_oov_share`` on the batch with some copied words hidden as out-of-vocabulary ones
        (:func:`hide_copied_words`)."""
        self._batch_ids = batch.ids
        if self.optim_config.copy_oov_share:
            batch = hide_copied_words(batch, share=self.optim_config.copy_oov_share, vocab_size=self.model.vocab_size,
                                      kept_ids=self.model.special_ids)
        weight = self.model_config.pooling_penalty
        out = self.teacher_forced(batch, return_attention=bool(weight))
        n_tokens = batch.n_target_tokens
        loss = self.smoothed_nll(batch, out)
        self.log("train/loss", loss, prog_bar=True, batch_size=n_tokens)
        if weight:
            penalty = pooling_penalty(out.encoded.pooling_weights, batch.src_mask)
            self.log("train/pooling_penalty", penalty, batch_size=len(batch))
            loss = loss + weight * penalty
        if out.copy is not None and out.copy.coverage_loss is not None:
            coverage = coverage_loss(out.copy.coverage_loss, batch.target_labels())
            self.log("train/coverage_loss", coverage, batch_size=n_tokens)
            loss = loss + self.model_config.coverage_loss_weight * coverage
        return loss

    # --- divergence guard ------------------------------------------------------------------------

    def optimizer_step(self, epoch: int, batch_idx: int, optimizer: Any, optimizer_closure: Any = None) -> None:
        """Run the forward and backward pass (Lightning's closure), then update only when the loss and
        the gradient are finite on every rank; otherwise skip the update (and its LR step), count it, and
        after ``optim.max_consecutive_skips`` skips in a row raise :class:`TrainingDiverged`."""
        loss = optimizer_closure()
        if self._update_is_finite(loss):
            self._consecutive_skips = 0
            self._skipped_last_update = False
            optimizer.step(closure=lambda: loss)  # the precision plugin's hooks and clipping run as usual
            return
        optimizer.zero_grad(set_to_none=True)
        self.skipped_steps += 1
        self._consecutive_skips += 1
        self._skipped_last_update = True
        limit = self.optim_config.max_consecutive_skips
        if self._consecutive_skips >= limit:
            ids = ", ".join(self._batch_ids[:8]) + (", ..." if len(self._batch_ids) > 8 else "")
            raise TrainingDiverged(
                f"training diverged at step {self.global_step}: {self._consecutive_skips} updates in a row had a "
                f"non-finite loss or gradient and were skipped (optim.max_consecutive_skips={limit}); "
                f"last batch: {ids}", rank=self.global_rank,
            )

    def _update_is_finite(self, loss: torch.Tensor | None) -> bool:
        """The loss and the (already averaged) gradient are finite, on every rank. Under 16-bit mixed
        precision the gradient is left to the GradScaler, which skips overflowing steps itself."""
        if loss is None:
            return True
        gradients = getattr(self.trainer.precision_plugin, "scaler", None) is None
        finite = self.update_is_finite_here(loss, gradients=gradients)
        return self.trainer.strategy.reduce_boolean_decision(finite, all=True)

    def update_is_finite_here(self, loss: torch.Tensor, *, gradients: bool = True) -> bool:
        """On this process, no trainer needed: ``loss`` is finite and (with ``gradients``) so is the norm of the
        gradients the backward pass left."""
        finite = bool(torch.isfinite(loss))
        grads = [p.grad for p in self.parameters() if p.grad is not None]
        if finite and grads and gradients:
            finite = bool(torch.isfinite(torch.nn.utils.get_total_norm(grads)))
        return finite

    def lr_scheduler_step(self, scheduler: Any, metric: Any | None) -> None:
        """Step the schedule after an update, not after a skipped one (update k uses lr(k))."""
        if not self._skipped_last_update:
            super().lr_scheduler_step(scheduler, metric)

    def on_train_batch_end(self, outputs: Any, batch: Batch, batch_idx: int) -> None:
        self.log("train/skipped_steps", float(self.skipped_steps), batch_size=len(batch))

    def validation_step(self, batch: Batch, batch_idx: int) -> None:
        log_probs = self.teacher_forced(batch).log_probs  # (B, S, V)
        labels = batch.target_labels()
        n_tokens = batch.n_target_tokens
        nll = F.nll_loss(log_probs.flatten(0, 1), labels.flatten(), ignore_index=IGNORE_INDEX)
        self.val_perplexity(log_probs, labels)
        self.log("val/loss", nll, prog_bar=True, batch_size=n_tokens, sync_dist=True)
        self.log("val/perplexity", self.val_perplexity, prog_bar=True)

    def parameter_groups(self) -> list[dict[str, Any]]:
        """The optimizer's parameter groups of the trainable parameters: one, or with ``optim.pretrained_group``
        the new layers first and the pretrained encoder's weights second, with the group's optimizer options."""
        trainable = [parameter for parameter in self.parameters() if parameter.requires_grad]
        group = self.optim_config.pretrained_group
        if group is None:
            return [{"params": trainable}]
        pretrained_ids = {id(parameter) for parameter in self.model.pretrained_parameters()}
        pretrained = [parameter for parameter in trainable if id(parameter) in pretrained_ids]
        if not pretrained:
            raise ValueError(f"optim.pretrained_group is set but model.encoder={self.model_config.encoder} has no "
                             f"trainable pretrained parameters (use model=pretrained, or optim.pretrained_group=null)")
        new = [parameter for parameter in trainable if id(parameter) not in pretrained_ids]
        return [{"params": new}, {"params": pretrained, **group.optimizer}]

    def configure_optimizers(self) -> dict[str, Any]:
        """``optim.optimizer`` called with the parameter groups (:meth:`parameter_groups`) and ``optim.scheduler``
        (when given) called with the optimizer, stepped after every update; a scheduler's ``d_model: null`` is
        ``model.d_model``. With ``optim.pretrained_group``, each scheduler option the group replaces is passed as
        a list, one value per group (new layers first)."""
        config = self.optim_config
        optimizer = instantiate(config.optimizer, _convert_="all")(self.parameter_groups())
        if config.scheduler is None:
            return {"optimizer": optimizer}
        scheduler_config = dict(config.scheduler)
        if "d_model" in scheduler_config and scheduler_config["d_model"] is None:
            scheduler_config["d_model"] = self.model_config.d_model
        if config.pretrained_group is not None:
            for key, value in config.pretrained_group.scheduler.items():
                scheduler_config[key] = [scheduler_config[key], value]
        scheduler = instantiate(scheduler_config, _convert_="all")(optimizer)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        if not torch.isfinite(torch.nn.utils.get_total_norm([p.detach() for p in self.parameters()])):
            raise TrainingDiverged(f"step {self.global_step}: the weights are not finite; no checkpoint written",
                                   rank=self.global_rank)
        checkpoint[CHECKPOINT_EXTRA_KEY] = {"tokenizer_json": self.tokenizer_json, "skipped_steps": self.skipped_steps,
                                            "init_from": self.started_from}

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.tokenizer_json = checkpoint_tokenizer_json(checkpoint)
        self.skipped_steps = checkpoint.get(CHECKPOINT_EXTRA_KEY, {}).get("skipped_steps", 0)
        self.started_from = checkpoint.get(CHECKPOINT_EXTRA_KEY, {}).get("init_from")

    @property
    def data_config(self) -> DataConfig | None:
        return data_config_from_hparams(self.hparams)

    def tokenizer(self) -> SubwordTokenizer:
        return tokenizer_from_json(self.tokenizer_json)


def module_hparams(
    model: ModelConfig, optim: OptimConfig, data: DataConfig, tokenizer: SubwordTokenizer,
    decode: DecodeConfig | None = None,
) -> dict[str, Any]:
    """Keyword arguments of :class:`HierSumModule` from typed configs and a tokenizer; the configs
    as plain values (no enum members: checkpoints load with ``weights_only=True``). ``decode``: the run's search
    settings, which its checkpoints record as the defaults of every front end that decodes with them."""
    return {
        "model": config_dict(model),
        "optim": config_dict(optim),
        "data": config_dict(data),
        **({"decode": config_dict(decode)} if decode is not None else {}),
        "vocab_size": tokenizer.vocab_size,
        "pad_id": tokenizer.special.pad,
        "bos_id": tokenizer.special.bos,
        "eos_id": tokenizer.special.eos,
        "separator_id": tokenizer.paragraph_separator_id,
        "unk_id": tokenizer.unknown_id,
        "tokenizer_json": tokenizer.to_str(),
    }
