"""Training with Lightning: the LightningModule, callbacks, the noam schedule, the fit of a composed config."""

from hiersum.training.module import HierSumModule, module_hparams

__all__ = ["HierSumModule", "module_hparams"]
