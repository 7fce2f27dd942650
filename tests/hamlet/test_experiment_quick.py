"""``cepopt experiment hamlet-executor --quick`` runs on Spark and every policy agrees."""

from __future__ import annotations

import pytest


@pytest.mark.spark
def test_hamlet_executor_quick(spark, tmp_path):
    from cepopt.experiments.framework import run_experiment
    from cepopt.experiments.hamlet_executor import EXPERIMENT

    out = run_experiment(EXPERIMENT, quick=True, out_dir=tmp_path, progress=False)
    df = out.frame
    assert len(df) == len(EXPERIMENT.grid(True))
    assert (df.groupby("burst")["digest"].nunique() == 1).all()
    assert (df[df["policy"] == "nonshared"]["snapshots"] == 0).all()
    assert (df[df["policy"] == "static"]["shared_bursts"] == df[df["policy"] == "static"]["bursts"]).all()
    assert out.markdown_path is not None and (tmp_path / "hamlet-executor.png").exists()


def test_stream_generator_is_bursty():
    from cepopt.experiments.hamlet_executor import make_stream

    calm, bursty = make_stream(2, 2000, 2, seed=1), make_stream(20, 2000, 2, seed=1)
    runs = [(s["type"] != s["type"].shift()).sum() for s in (calm, bursty)]
    assert runs[1] < runs[0]
