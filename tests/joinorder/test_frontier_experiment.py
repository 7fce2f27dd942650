"""The quick form of `cepopt experiment joinorder-frontier` (issue 34 part 5)."""

from __future__ import annotations


def test_quick_frontier(tmp_path):
    from cepopt.experiments.framework import get_experiment, run_experiment
    from cepopt.experiments.joinorder_frontier import ANCHORS, POINTS

    out = run_experiment(get_experiment("joinorder-frontier"), quick=True, out_dir=tmp_path, progress=False)
    df = out.frame
    # one point per (kind, rule, shape), every one proven at n = 8, with the load beside its time
    assert out.complete == out.total == len(POINTS) == 16
    assert set(df["status"]) == {"optimal"}, df[["method", "shape", "rule", "message"]]
    assert df["load_before"].notna().all() and df["load_after"].notna().all()
    # the two rules' optima: never cheaper with cross products avoided (a smaller plan space)
    for (kind, shape), d in df.groupby(["kind", "shape"]):
        rule = dict(zip(d["rule"], d["log_cost"], strict=True))
        assert rule["avoid"] >= rule["allowed"] - 1e-9 * abs(rule["allowed"]), (kind, shape)
        if shape == "clique":  # every set of a clique is connected: the same optimum
            assert abs(rule["avoid"] - rule["allowed"]) <= 1e-9 * abs(rule["allowed"])
    text = (tmp_path / "joinorder-frontier.md").read_text()
    assert all(a in text for a, _ in ANCHORS) and "load" in text
