"""The workload generator (`cepopt generate sharon`) and the --quick grid of `cepopt experiment
sharon-optimizers`."""

from __future__ import annotations

import pytest

from cepopt.errors import CepoptError
from cepopt.instance import from_json, to_json
from cepopt.instances.generate import generate
from cepopt.sharon.patterns import query_types
from cepopt.sharon.problem import build


def test_generator_is_seeded_and_round_trips():
    a = generate("sharon", ["--queries", "30", "--length", "10", "--seed", "4"])
    b = generate("sharon", ["--queries", "30", "--length", "10", "--seed", "4"])
    c = generate("sharon", ["--queries", "30", "--length", "10", "--seed", "5"])
    assert to_json(a) == to_json(b) != to_json(c)
    assert len(a.workload) == 30 and all(len(t) == 10 for t in query_types(a.workload).values())
    again = from_json(to_json(a))
    assert again.workload == a.workload and again.statistics == a.statistics
    problem = build(again)
    assert len(problem.original) > 0  # the default preset leaves real sharing decisions


def test_generator_presets_and_knobs():
    stress = generate("sharon", ["--queries", "20", "--preset", "stress", "--seed", "1"])
    assert max(stress.statistics.rate_map.values()) <= 2
    ew = generate("sharon", ["--queries", "20", "--events-per-window", "2000", "--seed", "1"])
    assert sum(dict(ew.statistics.events_per_window).values()) == pytest.approx(2000, rel=1e-3)
    uniq = generate("sharon", ["--queries", "40", "--unique-types", "--seed", "3"])
    assert all(len(set(t)) == len(t) == 10 for t in query_types(uniq.workload).values())
    assert len(build(uniq, expand=False).original) > 0
    with pytest.raises(CepoptError):
        generate("sharon", ["--queries", "20", "--sharing", "2"])
    with pytest.raises(CepoptError):
        generate("sharon", ["--preset", "nope"])
    for bad in ("nan", "inf", "0"):
        with pytest.raises(CepoptError, match="--events-per-window"):
            generate("sharon", ["--queries", "20", "--events-per-window", bad])


def test_quick_experiment(tmp_path):
    from cepopt.experiments.framework import get_experiment, run_experiment

    out = run_experiment(get_experiment("sharon-optimizers"), quick=True, out_dir=tmp_path, progress=False)
    df = out.frame
    assert out.ran == 5 and out.markdown_path.exists()
    assert (tmp_path / "sharon-optimizers-default.png").exists()
    assert set(df.graph) == {"original", "expanded", "all"}
    # the scale point (200 queries here): the compact models on the expanded problem, its build counted
    scale = df[df.queries == 200]
    assert set(scale.method) == {"cpsat-compact", "milp-compact"} and set(scale.graph) == {"expanded"}
    assert (scale.total_s >= scale.build_s).all() and (scale.status == "optimal").all()
    assert "| expanded | cpsat-compact | default | 20000 |" not in out.markdown_path.read_text()  # not run
    df = df[df.queries != 200]
    # every exact method that proves an optimum agrees with the compact model on the original graph
    orig = df[(df.graph == "original") & (df.status == "optimal")]
    for _, g in orig.groupby(["preset", "queries"]):
        assert g.objective.max() - g.objective.min() < 1e-6
    for key, g in df[df.status == "optimal"].groupby(["preset", "queries"]):
        best = {graph: g[(g.graph == graph) & g.method.isin(["cpsat-compact", "milp-compact"])].objective.max()
                for graph in ("original", "expanded", "all")}
        assert best["original"] <= best["expanded"] + 1e-6 <= best["all"] + 2e-6, key
