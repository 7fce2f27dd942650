"""``cepopt experiment joinorder-executor --quick``: every plan of a pattern finds the same matches and
the measured active partial matches of the optimal plan follow the prediction."""

from __future__ import annotations

import pytest


@pytest.mark.spark
def test_quick_joinorder_executor_experiment(spark, tmp_path, monkeypatch):
    from cepopt.experiments import joinorder_executor as exp
    from cepopt.experiments.framework import run_experiment

    # The first point of the --quick grid with three of the methods keeps the default suite fast
    # (the CLI's --quick runs both points with every method).
    first = exp.grid(True)[:1]
    monkeypatch.setattr(exp, "METHODS", ("trivial", "dp-ld", "dp-b"))
    experiment = exp.Experiment(**{**exp.EXPERIMENT.__dict__, "grid": lambda quick: first})
    out = run_experiment(experiment, quick=True, out_dir=tmp_path, progress=False)
    df = out.frame
    assert list(df["method"]) == ["trivial", "dp-ld", "dp-b"]
    assert df["matches"].nunique() == 1 and df["digest"].nunique() == 1 and df["matches"].iloc[0] > 0
    best = df[df["method"] == "dp-ld"].iloc[0]
    assert 0.5 <= best["active"] / best["predicted"] <= 2.0
    assert (tmp_path / "joinorder-executor.md").exists() and (tmp_path / "joinorder-executor.png").exists()
