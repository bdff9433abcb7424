"""scripts/bench_baselines.py: clusters of many articles (real Multi-News ones where ``../shared`` is, else
synthetic), each baseline timed over them in this process, and ``hiersum evaluate`` of them end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.scripts import load_script


def test_synthetic_clusters_hold_the_articles_asked_for(tmp_path: Path, capsys: pytest.CaptureFixture):
    bench = load_script("bench_baselines")
    source, clusters = bench.bench_clusters(3, 4, data=tmp_path / "absent.jsonl", article_words=60, seed=2)
    assert source == "synthetic" and [len(c.documents) for c in clusters] == [4, 4, 4]
    for cluster in clusters:
        assert all(sum(len(p.split()) for p in article) >= 60 for article in cluster.documents)
        assert len(cluster.references) == 1 and cluster.references[0]
    assert bench.bench_clusters(3, 4, data=tmp_path / "absent.jsonl", article_words=60, seed=2)[1] == clusters
    with pytest.raises(ValueError, match="4 articles a cluster: expected at least as many articles, found 3"):
        bench.clusters(bench.synthetic_articles(3, 10, seed=0), 1, 4, seed=0)


@pytest.mark.slow
def test_each_baseline_and_hiersum_evaluate_are_timed(tmp_path: Path, capsys: pytest.CaptureFixture):
    bench = load_script("bench_baselines")
    report = bench.main(["--clusters", "2", "--articles", "3", "--article-words", "80", "--repeats", "2",
                         "--data", str(tmp_path / "absent.jsonl"), "--evaluate"])
    assert report["source"] == "synthetic" and report["clusters"] == 2 and report["mean_words"] >= 240
    assert list(report["baselines"]) == ["lead", "lead3", "oracle", "lexrank"]
    for timing in report["baselines"].values():
        assert len(timing["runs"]) == 2 and min(timing["runs"]) <= timing["seconds"] <= max(timing["runs"])
    evaluate = report["evaluate"]
    assert "baselines=[lead,lead3,oracle,lexrank]" in evaluate["command"]
    assert evaluate["wall_s"] > 0 and evaluate["cpu_s"] > 0
