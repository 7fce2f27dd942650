"""The gloria-optimizers benchmark in its --quick form."""

from __future__ import annotations

from cepopt.experiments import gloria_optimizers as go
from cepopt.experiments.framework import get_experiment, run_experiment


def test_quick_benchmark(tmp_path):
    out = run_experiment(get_experiment("gloria-optimizers"), quick=True, out_dir=tmp_path, progress=False)
    df = out.frame
    assert set(df["run"]) >= {"gloria", "cpsat-safe", "milp-safe", "greedy"}
    obj = df.pivot_table(index="instance", columns="run", values="objective", aggfunc="first")
    assert (obj["cpsat-safe"] <= obj["gloria"] + 1e-9).all()
    assert (obj["milp-safe"] == obj["cpsat-safe"]).all()
    # an optimum over candidate nodes is a plan of the problem, not its proven optimum
    models = df[df["run"].str.startswith(("cpsat", "milp")) & ~df["run"].isin(["cpsat-exhaustive", "cpsat-full",
                                                                                  "milp-full"])]
    assert set(models["status"]) == {"feasible"} and set(models["candidate_status"]) == {"optimal"}
    assert set(df[df["run"] == "cpsat-exhaustive"]["status"]) == {"optimal"}
    assert obj.loc["gloria-e6", "cpsat-exhaustive"] == 128 < obj.loc["gloria-e6", "cpsat-noprune"]
    # the full-space model proves Def. 2.7's optimum: the exhaustive optimum where that one is known
    full = df[df["run"].isin(["cpsat-full", "milp-full"])]
    assert set(full["status"]) == {"optimal"}
    assert (obj["cpsat-full"] == obj["milp-full"]).all()
    assert (obj["cpsat-full"] <= obj["cpsat-noprune"] + 1e-9).all()
    exhaustive = obj["cpsat-exhaustive"].dropna()  # not run on the published workload (beyond max_options)
    assert len(exhaustive) >= 4 and (obj["cpsat-full"][exhaustive.index] == exhaustive).all()
    text = out.markdown_path.read_text()
    assert "strictly cheaper than the published search" in text
    assert "Def. 2.7 optimum" in text and "gloria above the true optimum" in text
    assert (tmp_path / "gloria-optimizers-time.png").exists()
    if not (go.GLORIA_DATA / "workloads" / go.QUICK_PUBLISHED).is_file():  # the published data is absent
        assert "No published Java optimizer latency matched" in text
        return
    # one published workload, timed against the authors' Java optimizer latency
    timed = df[df["java_ms"].notna()]
    assert set(timed["run"]) == set(go.TIMED) and set(timed["instance"]) == {go.QUICK_PUBLISHED}
    assert (timed["search_cpu_ms"] > 0).all()
    ratio = timed["search_cpu_ms"] / timed["java_ms"]
    assert (abs(ratio - timed["java_ratio"]) < 1e-9).all()
    assert (timed["java_ratio_with_parse"] > timed["java_ratio"]).all()
    assert "not this one" in text and "- **gloria**: ours / Java median" in text
