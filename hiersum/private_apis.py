"""Every private API of another library that hiersum relies on, fenced in one module.

A name with a leading underscore is no promise of its library: a release may rename or remove it. hiersum uses
one only where no public API does the job, and only here: each behind a small named function, or a mixin for a
private hook the library calls, whose docstring says what it is, why no public API does it, and the version it was
checked on. ``tests/test_private_apis.py`` lists every private name the package touches (an AST scan of
``hiersum/``, the list only shrinks, and none is touched outside this module) and checks that each still exists in
the installed library, so that an upgrade removing one fails there, naming it.

The libraries are imported inside the functions that use them: importing this module loads none of them, so every
stage may import it (``tests/test_layout.py``). A mixin goes ahead of the library's class in a subclass's bases.
This module imports nothing of hiersum.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

# ---------------------------------------------------------------------------------------------- rouge-score


def rouge_ngrams(tokens: Sequence[str], n: int) -> Counter:
    """The n-grams of ``tokens`` with their counts, as ROUGE-N counts them (``rouge_scorer._create_ngrams``).

    rouge-score has no public n-gram API; the oracle and the novel / repeated n-gram ratios must count what ROUGE-N
    counts. Checked on rouge-score 0.1.2."""
    from rouge_score import rouge_scorer

    return rouge_scorer._create_ngrams(tokens, n)


# ---------------------------------------------------------------------------------------------- sacrebleu


def sacrebleu_statistics(metric: Any, hypotheses: Sequence[str], references: Sequence[Sequence[Any]]) -> list:
    """The sufficient statistics of each sentence, one row per hypothesis in corpus order, of a sacrebleu metric
    (``BLEU()``, ``CHRF()``; ``Metric._extract_corpus_statistics``).

    sacrebleu's corpus score is a function of the statistics summed over the sentences; the bootstrap intervals
    resample these rows, and evaluation computes them in parts. No public API returns them (sacrebleu's own
    paired bootstrap reads the same methods). Checked on sacrebleu 2.6.0."""
    return metric._extract_corpus_statistics(list(hypotheses), references)


def sacrebleu_corpus_score(metric: Any, statistics: Sequence[Sequence[float]]) -> Any:
    """The corpus score (``BLEUScore``, ``CHRFScore``) of the per-sentence :func:`sacrebleu_statistics` rows
    (``Metric._aggregate_and_compute``): ``corpus_score``'s figure without extracting them again. Checked on
    sacrebleu 2.6.0."""
    return metric._aggregate_and_compute(list(statistics))


def sacrebleu_score_of_sums(metric: Any, sums: Any) -> Any:
    """The score of statistics already summed over the sentences (``Metric._compute_score_from_stats``): one
    bootstrap resample's score from its weighted sum. Checked on sacrebleu 2.6.0."""
    return metric._compute_score_from_stats(sums)


# ---------------------------------------------------------------------------------------------- torch


def cpu_flash_attention_ops() -> tuple[Any, Any]:
    """The CPU kernels of ``scaled_dot_product_attention``, forward and backward
    (``torch.ops.aten._scaled_dot_product_flash_attention_for_cpu`` and ``..._backward``).

    ``FlopCounterMode`` does not count them, and its ``custom_mapping`` is keyed by the op objects; aten names
    them with a leading underscore, under no public alias. Checked on torch 2.13."""
    import torch

    return (torch.ops.aten._scaled_dot_product_flash_attention_for_cpu,
            torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward)


@contextlib.contextmanager
def compiling() -> Iterator[None]:
    """``torch.compiler.is_compiling()`` reads True inside: torch's ``torch.compiler._compile_session_context``
    where it has one (2.13), else the module flag that function reads, ``torch.compiler._is_compiling_flag``
    (torch 2.11, the GPU machines' build, lacks the context).

    The dry run traces a step as ``torch.compile`` does (the model reads no tensor value into Python); torch has
    only the public getter. Checked on torch 2.13 and 2.11."""
    import torch

    session = getattr(torch.compiler, "_compile_session_context", None)
    if session is not None:
        with session():
            yield
        return
    before = torch.compiler._is_compiling_flag
    torch.compiler._is_compiling_flag = True
    try:
        yield
    finally:
        torch.compiler._is_compiling_flag = before


def fake_tensor_mode(**options: Any) -> Any:
    """PyTorch's ``FakeTensorMode(**options)`` (``torch._subclasses.fake_tensor``): tensors with shapes and
    dtypes but no storage. The module is private; torch exposes the mode under no public path. Checked on
    torch 2.13."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode(**options)


def mem_tracker_class() -> type:
    """PyTorch's ``MemTracker`` (``torch.distributed._tools.mem_tracker``), which sums the bytes of every tensor
    alive by kind and keeps the peak: the private module is its only path. Checked on torch 2.13."""
    from torch.distributed._tools.mem_tracker import MemTracker

    return MemTracker


class StepPeakOnly:
    """Ahead of ``MemTracker`` in a subclass's bases: its private ``_update_peak_stats`` hook (called after
    every operator) keeps only the peak over all modules, read from its private ``_curr_mem_snap``,
    ``_peak_mem`` and ``_peak_mem_snap``. ``MemTracker`` also updates the peak of each module being run, a walk
    over every module tracked so far: that walk was over half of a dry run's time (issue 31); it has no option to
    skip it. A ``MemTracker`` lacking these fields gets its full bookkeeping instead. Checked on torch 2.13."""

    def _update_peak_stats(self, peak_state: Any) -> None:
        if not hasattr(self, "_curr_mem_snap") or not hasattr(self, "_peak_mem"):
            super()._update_peak_stats(peak_state)
            return
        for device, snapshot in self._curr_mem_snap.items():
            if self._peak_mem.get(device, 0) < snapshot["Total"]:
                self._peak_mem[device] = snapshot["Total"]
                self._peak_mem_snap[device] = dict(snapshot)


# ---------------------------------------------------------------------------------------------- Lightning


def logs_update_now(trainer: Any) -> bool:
    """Whether the trainer logs at this step (``trainer._logger_connector.should_update_logs``: every
    ``log_every_n_steps``, and when it stops). What Lightning's ``ThroughputMonitor`` asks before logging; the
    Trainer has no public property for it. Checked on pytorch-lightning 2.6.6."""
    return trainer._logger_connector.should_update_logs


def log_to_loggers(trainer: Any, metrics: dict[str, Any], step: int | None) -> None:
    """Log ``metrics`` to the trainer's loggers at ``step`` as Lightning's own figures are
    (``trainer._logger_connector.log_metrics``: also kept in ``trainer.logged_metrics``). What Lightning's
    ``ThroughputMonitor`` does; a callback has no public way to log outside a LightningModule hook. Checked on
    pytorch-lightning 2.6.6."""
    trainer._logger_connector.log_metrics(metrics, step=step)


class ThroughputMonitorHooks:
    """Ahead of Lightning's ``ThroughputMonitor`` in a subclass's bases: its private ``_compute(trainer,
    iter_num)`` hook (called at the end of each batch to log the window's figures) calls the subclass's
    ``log_window(trainer, iter_num)``; :attr:`throughputs` is its private ``_throughputs`` (the
    ``lightning_fabric`` ``Throughput`` of each stage). The monitor has no public hook for what it logs. Checked
    on pytorch-lightning 2.6.6."""

    def _compute(self, trainer: Any, iter_num: int | None = None) -> None:
        self.log_window(trainer, iter_num)

    def log_window(self, trainer: Any, iter_num: int | None = None) -> None:
        raise NotImplementedError

    @property
    def throughputs(self) -> dict[Any, Any]:
        """The ``Throughput`` of each running stage."""
        return self._throughputs


def csv_logger_started(logger: Any) -> bool:
    """Whether a ``CSVLogger`` has made its experiment writer (``logger._experiment``, which its ``experiment``
    property makes on first use, deleting ``metrics.csv``); reading the property would make it. Checked on
    pytorch-lightning 2.6.6."""
    return logger._experiment is not None


def launched_ranks(launcher: Any) -> list:
    """The processes of the other ranks of this node when ``launcher`` is Lightning's own
    (``pytorch_lightning.strategies.launchers._SubprocessScriptLauncher.procs``), else ``[]`` (torchrun,
    SLURM). The launcher class is private; nothing public says which ranks rank 0 started. Checked on
    pytorch-lightning 2.6.6."""
    from pytorch_lightning.strategies.launchers import _SubprocessScriptLauncher

    return launcher.procs if isinstance(launcher, _SubprocessScriptLauncher) else []


def stop_child_process_observers() -> None:
    """Give Lightning's child-process observer (``lightning_fabric``'s ``_ChildProcessObserver``, a thread of
    rank 0 that SIGKILLs every rank within 5 s of a child's death) no children to watch: its private
    ``_child_processes`` emptied. It has no public switch. Checked on lightning-fabric 2.6.6."""
    from lightning_fabric.strategies.launchers.subprocess_script import _ChildProcessObserver

    for thread in threading.enumerate():
        if isinstance(thread, _ChildProcessObserver):
            thread._child_processes = []


# ---------------------------------------------------------------------------------------------- OmegaConf


def config_option_names(node: Any) -> list[str]:
    """The dotted name of every option of the whole config ``node`` (a ``DictConfig``) belongs to, interpolations
    left unresolved: its root (``node._get_root()``), and each child node without resolving it
    (``_get_node(key)``, ``_is_none()``, ``_is_missing()``). OmegaConf's public API gives a node's values,
    resolved, but not its root nor its unresolved children. Checked on omegaconf 2.3.1."""
    from omegaconf import DictConfig

    def walk(config: Any, prefix: str) -> Iterator[str]:
        for key in config.keys():
            child = config._get_node(key)
            if isinstance(child, DictConfig) and not child._is_none() and not child._is_missing():
                yield from walk(child, f"{prefix}{key}.")
            else:
                yield f"{prefix}{key}"

    return list(walk(node._get_root(), ""))


# ---------------------------------------------------------------------------------------------- LitServe


class KeepsServerSockets:
    """Ahead of ``litserve.LitServer`` in a subclass's bases: its private ``_start_server(port,
    num_uvicorn_servers, log_level, sockets, uvicorn_worker_type, **kwargs)`` also keeps the listening
    ``sockets`` it binds as ``self.sockets``. LitServe binds them inside ``run`` and exposes them nowhere else.
    Checked on litserve 0.2.19."""

    def _start_server(self, port, num_uvicorn_servers, log_level, sockets, uvicorn_worker_type,  # noqa: ANN001
                      **kwargs):  # noqa: ANN003 - LitServe's signature
        self.sockets = sockets
        return super()._start_server(port, num_uvicorn_servers, log_level, sockets, uvicorn_worker_type, **kwargs)


# ---------------------------------------------------------------------------------------------- huggingface_hub


class ModelHubLoadHook:
    """Ahead of ``huggingface_hub.PyTorchModelHubMixin`` in a subclass's bases: the mixin's loading hook
    ``_from_pretrained`` (documented as the method a library overrides, yet named with an underscore) calls the
    subclass's ``load_from_directory(model_id=..., config=..., map_location=..., **model_kwargs)``. Its
    ``config`` parameter tells the mixin to pass ``config.json``'s ``config``. Checked on huggingface_hub
    2.4.0."""

    @classmethod
    def _from_pretrained(cls, *, model_id: str, config: dict[str, Any], map_location: str = "cpu",
                         **model_kwargs: Any) -> Any:
        return cls.load_from_directory(model_id=model_id, config=config, map_location=map_location, **model_kwargs)

    @classmethod
    def load_from_directory(cls, *, model_id: str, config: dict[str, Any], map_location: str = "cpu",
                            **model_kwargs: Any) -> Any:
        raise NotImplementedError
