"""The job a launcher started this process in (:mod:`hiersum.training.launchers`), from the environment
torchrun and SLURM give their processes."""

from __future__ import annotations

import pytest

from hiersum.training.launchers import launched_job, run_name, torchrun_restart_hazard

LAUNCHER_VARIABLES = ("TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
                      "TORCHELASTIC_USE_AGENT_STORE", "RANK", "GROUP_RANK", "LOCAL_RANK", "WORLD_SIZE",
                      "MASTER_ADDR", "MASTER_PORT", "SLURM_JOB_ID", "SLURM_JOB_NAME", "SLURM_NTASKS",
                      "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_RESTART_COUNT")


@pytest.fixture
def environ(monkeypatch):
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)

    def set_variables(**variables: str) -> None:
        for name, value in variables.items():
            monkeypatch.setenv(name, value)

    return set_variables


TORCHRUN = {"TORCHELASTIC_RUN_ID": "5f1e-42", "RANK": "1", "GROUP_RANK": "0", "LOCAL_RANK": "1", "WORLD_SIZE": "2",
            "MASTER_ADDR": "localhost", "MASTER_PORT": "29500"}
SLURM = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": "train", "SLURM_NTASKS": "2"}


def test_a_process_started_by_hand_has_no_job_and_keeps_the_dated_run_name(environ):
    assert launched_job() is None and run_name("2026-11-25_10-00-00") == "2026-11-25_10-00-00"


def test_every_rank_and_restart_of_a_torchrun_job_has_its_run_name(environ):
    environ(**TORCHRUN, TORCHELASTIC_RESTART_COUNT="0")
    first = launched_job()
    environ(RANK="0", LOCAL_RANK="0", TORCHELASTIC_RESTART_COUNT="2")
    restarted = launched_job()
    assert (first.launcher, first.restart, restarted.restart) == ("torchrun", 0, 2)
    assert first.run_name == restarted.run_name == run_name("date") == "torchrun-5f1e-42"
    assert restarted.describe() == "torchrun job 5f1e-42, restart 2"


def test_a_slurm_job_keeps_its_run_name_when_requeued_and_an_array_task_has_its_own(environ):
    environ(**SLURM)
    assert launched_job().run_name == "slurm-4242" and launched_job().restart == 0
    environ(SLURM_RESTART_COUNT="1")
    assert launched_job().describe() == "SLURM job 4242, restart 1"
    environ(SLURM_ARRAY_JOB_ID="4200", SLURM_ARRAY_TASK_ID="3")
    assert launched_job().run_name == "slurm-4200_3"


def test_an_interactive_slurm_allocation_is_no_job_to_resume(environ):
    environ(**{**SLURM, "SLURM_JOB_NAME": "interactive"})  # as Lightning's SLURMEnvironment sees it
    assert launched_job() is None


def test_torchrun_restarts_through_its_shared_store_get_the_advice_to_unshare_it(environ):
    environ(**TORCHRUN, TORCHELASTIC_USE_AGENT_STORE="True", TORCHELASTIC_MAX_RESTARTS="0")
    assert torchrun_restart_hazard() is None  # no restart, no hazard
    environ(TORCHELASTIC_MAX_RESTARTS="2")
    assert "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1" in torchrun_restart_hazard()
    environ(TORCHELASTIC_USE_AGENT_STORE="False")
    assert torchrun_restart_hazard() is None
