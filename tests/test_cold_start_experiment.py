"""``cepopt experiment cold-start --quick`` (issue 35, part 1): the two join-order DPs' first and second runs
in new processes, each under 1 s of wall time plus the interpreter's start (the plain DP needs no compiling)."""

from __future__ import annotations

from cepopt.experiments.framework import get_experiment, run_experiment


def test_quick_cold_start_measures_first_and_second_runs(tmp_path):
    exp = get_experiment("cold-start")
    out = run_experiment(exp, quick=True, out_dir=tmp_path, progress=False)
    df = out.frame
    assert list(df["command"]) == ["solve joinorder-e6 --method dp-ld", "solve joinorder-e6 --method dp-b"]
    assert (df["status"] == 0).all()
    assert (df["cold_s"] > 0).all() and (df["warm_s"] > 0).all()
    # no compile on first use: the cold run costs at most twice the warm one (issue 35; and 0.5 s of noise)
    assert (df["cold_s"] <= 2 * df["warm_s"] + 0.5).all(), df[["command", "cold_s", "warm_s"]]
    assert (tmp_path / "cold-start.md").read_text().count("joinorder-e6") == 2
