"""The flat baseline, graph-informed attention and the pooling penalty through ``hiersum-train``."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_train_cli import run_cli, train_args


@pytest.mark.slow
@pytest.mark.parametrize(
    ("option", "in_config"),
    [("model=flat_tiny", "encoder: flat"), ("model.graph=similarity", "graph: similarity"),
     ("model.graph=discourse", "graph: discourse"), ("model.pooling_penalty=0.1", "pooling_penalty: 0.1")],
    ids=["flat", "graph-similarity", "graph-discourse", "pooling-penalty"],
)
def test_train_fast_dev_run_with_extension(option, in_config, tiny_corpus, tmp_path):
    run_dir = tmp_path / "run"
    args = train_args(tiny_corpus, run_dir, "debug=fast_dev_run", option)
    if option.startswith("model="):
        args.remove("model=tiny")
    result = run_cli("hiersum-train", args)
    assert f"run directory: {run_dir}" in result.stdout
    assert in_config in (run_dir / ".hydra" / "config.yaml").read_text()
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["n_examples"] == 4
    assert metrics["test"]["model"]["perplexity"] > 1.0
