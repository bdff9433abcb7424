"""The job a launcher started this process in: torchrun (TorchElastic) and SLURM give every rank, every
restart of the worker group (torchrun ``--max-restarts``) and every requeue (SLURM) of one job the same id,
so the job keeps one run directory and resumes from its newest checkpoint by itself.

- torchrun: ``TORCHELASTIC_RUN_ID`` (``--rdzv-id``; a fresh UUID per ``torchrun`` command when none is
  given) and ``TORCHELASTIC_RESTART_COUNT``;
- SLURM (as Lightning's ``SLURMEnvironment`` detects it: ``SLURM_NTASKS`` set, the job not named ``bash`` or
  ``interactive``): ``SLURM_JOB_ID`` (``SLURM_ARRAY_JOB_ID_SLURM_ARRAY_TASK_ID`` for a task of an array, the
  id Lightning's auto-requeue hands to ``scontrol requeue``) and ``SLURM_RESTART_COUNT``.

Lightning's own DDP launcher needs none of this: it starts the other ranks itself, in the run directory of
rank 0 (``hydra.run.dir`` is passed to them).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

RESOLVER = "hiersum.run_name"
"""``${hiersum.run_name:DEFAULT}`` in ``conf/hydra/train.yaml``: :func:`run_name`."""


@dataclass(frozen=True)
class LaunchedJob:
    """The job of a launcher that restarts it (:func:`launched_job`)."""

    launcher: str
    """``torchrun`` or ``SLURM``."""
    job_id: str
    """The launcher's id of the job, the same on every rank and after every restart."""
    restart: int
    """How many times the launcher restarted (torchrun) or requeued (SLURM) the job: 0 the first time."""

    @property
    def run_name(self) -> str:
        """The run directory's name: ``torchrun-<run id>`` or ``slurm-<job id>``."""
        return f"{self.launcher.lower()}-{re.sub(r'[^A-Za-z0-9_.-]', '_', self.job_id)}"

    def describe(self) -> str:
        """``torchrun job 5f1e...`` or ``SLURM job 4242``, with the restart when there was one."""
        restarted = f", restart {self.restart}" if self.restart else ""
        return f"{self.launcher} job {self.job_id}{restarted}"


def launched_job() -> LaunchedJob | None:
    """The torchrun or SLURM job this process belongs to (torchrun first: torchrun inside a SLURM job
    restarts the workers itself); None when started otherwise (by hand, or by Lightning's launcher)."""
    from lightning_fabric.plugins.environments import SLURMEnvironment, TorchElasticEnvironment

    if TorchElasticEnvironment.detect():
        return LaunchedJob("torchrun", os.environ.get("TORCHELASTIC_RUN_ID", "none"),
                           int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")))
    if SLURMEnvironment.detect() and "SLURM_JOB_ID" in os.environ:
        array_job = os.environ.get("SLURM_ARRAY_JOB_ID")
        job_id = (f"{array_job}_{os.environ['SLURM_ARRAY_TASK_ID']}" if array_job is not None
                  else os.environ["SLURM_JOB_ID"])
        return LaunchedJob("SLURM", job_id, int(os.environ.get("SLURM_RESTART_COUNT", "0")))
    return None


def torchrun_restart_hazard() -> str | None:
    """What to set when torchrun may restart the workers (``--max-restarts`` > 0) while sharing its rendezvous
    store with them (``TORCHELASTIC_USE_AGENT_STORE=True``, torch's default): the restarted group can read
    the addresses of the group it replaces from that store, and its gloo or NCCL connections fail
    (pytorch/pytorch#135712, #167288; seen here with gloo). None when nothing needs setting."""
    shared = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    if not shared or int(os.environ.get("TORCHELASTIC_MAX_RESTARTS", "0")) == 0:
        return None
    return ("torchrun shares its rendezvous store with the workers, so a restarted group may connect to the "
            "addresses of the old one (pytorch/pytorch#135712): set TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 in "
            "torchrun's environment for its restarts to work")


def run_name(default: str) -> str:
    """The name of this run's directory: the launched job's (:attr:`LaunchedJob.run_name`), else ``default``
    (the date and time of ``conf/hydra/train.yaml``)."""
    job = launched_job()
    return job.run_name if job is not None else default
