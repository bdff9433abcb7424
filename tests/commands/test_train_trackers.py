"""``hiersum train logger=[mlflow,wandb]``: one tiny run, offline, read back with each tracker's own reader: MLflow's
client on its file store, and the records of the W&B offline run that ``wandb sync`` would upload. Each holds the
run's config, its training curves, the test figures of ``metrics.json``, the library versions and the machine, and
the report's files."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch

from hiersum.commands.train import train
from hiersum.training.trackers import MLFLOW_FILE_STORE
from tests.helpers.config import tiny_train_config
from tests.helpers.threads import one_thread

pytestmark = pytest.mark.slow

STEPS = 3


@dataclass(frozen=True)
class TrackedRun:
    run_dir: Path
    store: Path
    """The MLflow file store."""
    metrics: dict[str, Any]
    """What ``train`` returned (``metrics.json``)."""


@pytest.fixture(scope="module")
def tracked(tiny_corpus: Path, tmp_path_factory: pytest.TempPathFactory, device: torch.device) -> TrackedRun:
    pytest.importorskip("mlflow", reason="no mlflow package (make ci-deps)")
    pytest.importorskip("wandb", reason="no wandb package (make ci-deps)")
    folder = tmp_path_factory.mktemp("tracked")
    run_dir, store = folder / "run", folder / "mlruns"
    cfg = tiny_train_config(
        tiny_corpus, run_dir, device, "logger=[mlflow,wandb]",
        f"logger.mlflow.tracking_uri=file:{store}", "callbacks=none", "trainer.max_epochs=1",
        f"trainer.max_steps={STEPS}", "trainer.log_every_n_steps=1", "trainer.limit_val_batches=1",
        "data.limit_eval_examples=2",
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(MLFLOW_FILE_STORE, "unset")  # unset during the run, as in a fresh shell; as it was after
        patch.delenv(MLFLOW_FILE_STORE)
        for variable in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):  # nothing in the home folder
            patch.setenv(variable, str(folder / variable.lower()))
        with one_thread(), contextlib.redirect_stdout(io.StringIO()):
            metrics = train(cfg)
    return TrackedRun(run_dir, store, metrics)


def test_mlflow_lists_the_run_with_its_config_metrics_versions_and_report(tracked, monkeypatch):
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv(MLFLOW_FILE_STORE, "true")  # what `mlflow ui` is started with on this store
    client = MlflowClient(f"file:{tracked.store}")
    experiment = client.get_experiment_by_name("hiersum")
    [run] = client.search_runs([experiment.experiment_id])
    assert (run.info.run_name, run.info.status) == ("run", "FINISHED")
    assert run.data.tags["run_dir"] == str(tracked.run_dir)
    params = run.data.params
    assert (params["seed"], params["trainer/max_steps"], params["model/d_model"]) == ("1234", str(STEPS), "16")
    assert params["logger/mlflow/tracking_uri"] == f"file:{tracked.store}"
    assert params["versions/torch"] == torch.__version__ and params["machine/cpu"]
    losses = client.get_metric_history(run.info.run_id, "train/loss")
    assert [point.step for point in losses] == list(range(STEPS)) and all(math.isfinite(p.value) for p in losses)
    figures = run.data.metrics
    assert "val/loss" in figures
    assert figures["test/model/rougeL"] == pytest.approx(tracked.metrics["test"]["model"]["rougeL"])
    assert figures["test/lead/bleu"] == pytest.approx(tracked.metrics["test"]["lead"]["bleu"])
    assert figures["n_examples"] == 2
    [rouge] = client.get_metric_history(run.info.run_id, "test/model/rougeL")
    assert rouge.step == STEPS
    assert {artifact.path for artifact in client.list_artifacts(run.info.run_id)} == {
        "metrics.json", "report.md", "report.html"}
    download = tracked.store.parent / "download"
    download.mkdir(exist_ok=True)  # MLflow 2 wants it there
    report = Path(client.download_artifacts(run.info.run_id, "report.md", str(download)))
    assert report.read_text() == (tracked.run_dir / "report.md").read_text()


def test_the_run_directory_keeps_its_own_csv_log_without_the_test_figures(tracked):
    with open(tracked.run_dir / "csv" / "metrics.csv", newline="") as handle:
        columns = set(next(csv.reader(handle)))
    assert {"train/loss", "val/loss"} <= columns and not any(column.startswith("test/") for column in columns)


def test_wandb_keeps_the_run_offline_with_its_config_metrics_versions_and_report(tracked):
    [offline] = (tracked.run_dir / "wandb").glob("offline-run-*")
    records = list(wandb_records(next(offline.glob("run-*.wandb"))))
    [run] = [record.run for record in records if record.WhichOneof("record_type") == "run"]
    assert (run.project, run.display_name) == ("hiersum", "run")
    config = {item.key: json.loads(item.value_json) for record in records
              if record.WhichOneof("record_type") == "config" for item in record.config.update}
    assert (config["seed"], config["trainer"]["max_steps"], config["model"]["d_model"]) == (1234, STEPS, 16)
    assert config["versions"]["torch"] == torch.__version__ and config["machine"]["cpu"]
    history = [{item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
               for record in records if record.WhichOneof("record_type") == "history"]
    losses = [row["train/loss"] for row in history if "train/loss" in row]
    assert len(losses) == STEPS and all(math.isfinite(loss) for loss in losses)
    assert any("val/loss" in row for row in history)
    [final] = [row for row in history if "test/model/rougeL" in row]
    assert final["test/model/rougeL"] == pytest.approx(tracked.metrics["test"]["model"]["rougeL"])
    assert final["trainer/global_step"] == STEPS
    saved = {item.path for record in records if record.WhichOneof("record_type") == "files"
             for item in record.files.files}
    assert {"metrics.json", "report.md", "report.html"} <= saved
    assert (offline / "files" / "report.md").read_text() == (tracked.run_dir / "report.md").read_text()
    assert any(record.WhichOneof("record_type") == "exit" for record in records)  # the run was finished


BLOCK = 32768
"""The transaction log of a W&B run (``run-<id>.wandb``) is a LevelDB log: blocks of this size, after a 7-byte file
header, of chunks (a 7-byte header: checksum, length, type; then the data) that hold the protobuf records."""
FULL, FIRST, LAST = 1, 2, 4
"""The chunk types: a whole record, or its first and last parts (3: a middle part)."""


def wandb_records(path: Path) -> Iterator[Any]:
    """The records (``wandb.proto.wandb_internal_pb2.Record``) of a W&B run's transaction log: what ``wandb sync``
    uploads. The SDK keeps no Python reader of its own (its Go core reads the file)."""
    from wandb.proto import wandb_internal_pb2

    data, position, parts = path.read_bytes(), 7, b""
    assert data[:4] == b":W&B", f"{path} is no W&B transaction log"
    while position + 7 <= len(data):
        left = BLOCK - position % BLOCK
        _, length, kind = struct.unpack("<IHB", data[position:position + 7])
        if left < 7 or (length, kind) == (0, 0):  # the zero padding at the end of a block
            position += left
            continue
        chunk = data[position + 7:position + 7 + length]
        parts = chunk if kind in (FULL, FIRST) else parts + chunk
        position += 7 + length
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(parts)
            yield record
