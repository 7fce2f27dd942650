"""``cepopt experiment executor-throughput --quick`` runs: a row per family (the published workloads when
../shared is there), the fixed cost of both engines with one digest, and a report."""

from __future__ import annotations

import pytest


@pytest.mark.spark
def test_quick_benchmark_runs(spark, tmp_path, monkeypatch):
    from cepopt.experiments.executor_throughput import SHARED, grid
    from cepopt.experiments.framework import get_experiment, run_experiment

    monkeypatch.delenv("CEPOPT_BASELINE", raising=False)
    out = run_experiment(get_experiment("executor-throughput"), quick=True, out_dir=tmp_path, progress=False)
    df = out.frame
    assert len(df) == len(grid(True))
    tp = df[df["kind"] == "throughput"]
    expected = {"sharon", "joinorder"} | ({"hamlet", "gloria"} if (SHARED / "anchors-data").is_dir() else set())
    assert set(tp["family"]) == expected and (tp["events_per_s"] > 0).all()
    # the trend and Sharon kernels report their CPU time beside the wall time of their partitions
    kernels = tp[tp["family"].isin(["hamlet", "gloria", "sharon"])]
    assert (kernels["kernel_cpu_events_per_s"] > 0).all()
    fixed = df[df["kind"] == "fixed"].set_index("plan")
    assert fixed.loc["spark", "digest"] == fixed.loc["local", "digest"]
    assert (tmp_path / "executor-throughput.md").read_text().count("fixed cost") >= 2
