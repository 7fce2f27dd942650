"""``cepopt experiment joinorder-executor --quick``: every plan of a pattern finds the same matches and
the measured active partial matches of the optimal plan follow the prediction."""

from __future__ import annotations

import pytest


@pytest.mark.spark
def test_quick_joinorder_executor_experiment(spark, tmp_path, monkeypatch):
    from cepopt.experiments import joinorder_executor as exp
    from cepopt.experiments.framework import run_experiment

    # One small pattern and three methods keep the default suite fast; the CLI's --quick grid runs
    # two patterns with every method.
    monkeypatch.setattr(exp, "grid", lambda quick: [
        {"kind": "conjunction", "size": 3, "seed": 0, "events": 2000, "symbols": 6}])
    monkeypatch.setattr(exp, "METHODS", ("trivial", "dp-ld", "dp-b"))
    experiment = exp.Experiment(**{**exp.EXPERIMENT.__dict__, "grid": exp.grid})
    out = run_experiment(experiment, quick=True, out_dir=tmp_path, progress=False)
    df = out.frame
    assert set(df["method"]) == set(exp.METHODS)
    assert df["matches"].nunique() == 1 and df["digest"].nunique() == 1
    best = df[df["method"] == "dp-ld"].iloc[0]
    assert 0.5 <= best["active"] / best["predicted"] <= 2.0
    assert (tmp_path / "joinorder-executor.md").exists() and (tmp_path / "joinorder-executor.png").exists()
