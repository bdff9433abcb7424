"""A DDP job one of whose ranks died (SIGKILL, the OOM killer, a lost node): the collectives of the others
fail (gloo as soon as the connection closes, NCCL after the strategy's timeout, ``ddp_timeout``), and
:func:`lost_rank` tells which rank was lost, so that the job ends with one line rather than a backend
traceback, and with no process of it left running.

- Rank 0 of Lightning's own launcher started the other ranks of its node (:func:`hiersum.private_apis.launched_ranks`):
  a child that has exited is the lost rank, and the others are killed (Lightning's launcher kills them the
  same way on Ctrl-C).
- A rank that Lightning's launcher started and whose parent (rank 0) is gone was orphaned: rank 0 was lost.
- Under torchrun (or SLURM) the launcher sees the dead worker itself, stops the others and restarts the group
  (torchrun ``--max-restarts``); the survivors only say that a rank was lost.
"""

from __future__ import annotations

import os
import signal
import time

import pytorch_lightning as pl
import torch.distributed as dist

from hiersum.private_apis import launched_ranks, stop_child_process_observers

EXIT_WAIT_SECONDS = 5.0
"""How long a survivor waits for the dead process to be seen as ended (its sockets close as it exits)."""

_COMMUNICATION_FAILURES = ("connection reset", "connection closed", "broken pipe", "timed out", "timeout",
                           "gloo", "nccl", "connection refused")
"""What a collective's error says when its peer is gone (gloo, NCCL, the c10d store)."""


def lost_rank(trainer: pl.Trainer, error: BaseException, parent_pid: int) -> str | None:
    """``rank 1 (pid 4242) was killed by SIGKILL``, ``rank 0 (pid 4241) ended`` or ``a rank was lost``
    when ``error`` (raised by ``trainer.fit``) is a DDP collective that failed because a rank died; None
    for any other error. ``parent_pid``: this process's parent when the fit started. On rank 0 of
    Lightning's launcher, the ranks still running are killed before it returns."""
    if trainer.world_size < 2 or not _is_communication_failure(error):
        return None
    children = launched_ranks(trainer.strategy.launcher)
    if children:  # Lightning's observer would SIGKILL every rank within 5 s: this function ends the job, in order
        stop_child_process_observers()
    deadline = time.monotonic() + EXIT_WAIT_SECONDS
    found = _lost(children, parent_pid)
    while found is None and time.monotonic() < deadline:
        time.sleep(0.05)
        found = _lost(children, parent_pid)
    for child in children:  # those still running: none is left behind
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            child.wait()
    return found or "a rank was lost"


def _lost(children: list, parent_pid: int) -> str | None:
    """The rank seen ended: a child of Lightning's launcher (rank 0's view), or the parent (a child's view)."""
    node_rank = int(os.environ.get("NODE_RANK", "0"))
    for local_rank, child in enumerate(children, start=1):
        if child.poll() is not None:
            global_rank = node_rank * (len(children) + 1) + local_rank
            return f"rank {global_rank} (pid {child.pid}) {_how_it_ended(child.returncode)}"
    launched_by_lightning = not children and "LOCAL_RANK" in os.environ and "TORCHELASTIC_RUN_ID" not in os.environ
    if launched_by_lightning and os.getppid() != parent_pid:
        return f"rank 0 (pid {parent_pid}) ended"
    return None


def _how_it_ended(returncode: int) -> str:
    if returncode < 0:
        return f"was killed by {signal.Signals(-returncode).name}"
    return f"exited with status {returncode}"


def _is_communication_failure(error: BaseException) -> bool:
    """A collective or the c10d store failed (``torch.distributed.DistError``, or gloo's RuntimeError)."""
    if isinstance(error, dist.DistError):
        return True
    message = str(error).lower()
    return isinstance(error, RuntimeError) and any(text in message for text in _COMMUNICATION_FAILURES)
