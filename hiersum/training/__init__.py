"""Training with Lightning: the LightningModule (:mod:`hiersum.training.module`), callbacks, the noam schedule, the
fit of a composed config.

This package's ``__init__`` imports nothing: the entry point of ``hiersum train`` imports
:mod:`hiersum.training.launchers` before Hydra composes, without loading Lightning.
"""
