"""The stock stream, statistics estimation, and the join-order driver behind ``cepopt execute``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cepopt.errors import CepoptError
from cepopt.executor.join_plan import compile_query, join_tree
from cepopt.executor.join_reference import node_counts, reference_matches
from cepopt.executor.join_stats import estimate_statistics
from cepopt.instances.stock_stream import PATTERN_KINDS, generate, pattern, stated_rates
from cepopt.joinorder.reduce import dnf
from cepopt.model import AttrRef, Condition, Filter, Query, Seq, Type, Window


def test_stock_stream_shape_and_rates():
    df = generate(seed=3, events=30_000, symbols=8)
    assert len(df) == 30_000
    assert list(df.columns) == ["id", "ts", "type", "price", "volume", "difference"]
    assert df["ts"].dtype == np.int64 and (df["ts"] % 60 == 0).all() and df["ts"].is_monotonic_increasing
    assert (df["price"] > 0).all()
    assert df.equals(generate(seed=3, events=30_000, symbols=8))
    # Each symbol's measured rate is close to the rate it was drawn with.
    duration = df["ts"].max() - df["ts"].min()
    stated = stated_rates(seed=3, symbols=8)
    for sym, count in df["type"].value_counts().items():
        assert count / duration == pytest.approx(stated[sym], rel=0.1)
    # difference is the change since the symbol's previous update.
    msft = df[df["type"] == "MSFT"]
    assert np.allclose(msft["difference"].iloc[1:], np.round(np.diff(msft["price"]), 2), atol=0.011)
    with pytest.raises(CepoptError):
        generate(events=0)


@pytest.mark.parametrize("kind", PATTERN_KINDS)
def test_paper_pattern_shapes(kind):
    q = pattern(kind, 5, seed=1, symbols=20)
    parts = dnf(q.pattern)
    assert len(parts) == (3 if kind == "disjunction" else 1)
    for part in parts:
        compiled = compile_query(q, part)
        assert compiled.n == (4 if kind == "negation" else 5)
    assert len(q.conditions) == 2 * len(parts)


def test_estimated_statistics_match_the_stream():
    rng = np.random.default_rng(0)
    n = 4000
    ev = pd.DataFrame({"ts": np.arange(n) * 2, "type": rng.choice(["A", "B"], n, p=[0.25, 0.75]),
                       "x": rng.integers(0, 10, n)})
    q = Query(Seq((Type("A", "a"), Type("B", "b"))), Window(10),
              where=(Condition(AttrRef("x", "a"), "=", AttrRef("x", "b")), Filter("a", "x", "<", 5)))
    stats = estimate_statistics(q, ev, sample=20_000)
    duration = 2 * (n - 1)
    assert stats.rate("A") == pytest.approx((ev["type"] == "A").sum() / duration)
    assert stats.rate("B") == pytest.approx((ev["type"] == "B").sum() / duration)
    # a.x < 5 keeps half of A; a.x = b.x among filtered A: P(b.x = a.x) = 1/10.
    assert stats.selectivity("a", "a") == pytest.approx(0.5, abs=0.05)
    assert stats.selectivity("a", "b") == pytest.approx(0.1, abs=0.02)
    with pytest.raises(CepoptError):
        estimate_statistics(q, ev.iloc[:0])


@pytest.mark.parametrize("missing", [None, np.nan], ids=["None", "nan"])
def test_estimated_selectivities_count_no_hit_on_missing_values(missing):
    """A filter or condition with a missing value (None in an object column, NaN in a float one) is
    not a hit, as in the executors: a.x != 5 keeps the 2 A events of 4 that have an x, and
    a.x != b.x holds for a (4, 1) pair only: 1/4 of the random pairs of passing events."""
    n = 400
    a_x = pd.Series([1, missing, missing, 4] * (n // 4), dtype=object if missing is None else float)
    b_x = pd.Series([1, missing] * (n // 2), dtype=object if missing is None else float)
    ev = pd.DataFrame({"ts": np.arange(2 * n), "type": ["A"] * n + ["B"] * n, "x": pd.concat([a_x, b_x],
                                                                                           ignore_index=True)})
    q = Query(Seq((Type("A", "a"), Type("B", "b"))), Window(10),
              where=(Filter("a", "x", "!=", 5), Condition(AttrRef("x", "a"), "!=", AttrRef("x", "b"))))
    stats = estimate_statistics(q, ev, sample=20_000)
    assert stats.selectivity("a", "a") == 0.5
    assert stats.selectivity("a", "b") == pytest.approx(0.25, abs=0.02)


def _instance(query: Query, rates: dict):
    from cepopt.instance import Instance
    from cepopt.model import Statistics, Workload

    return Instance(problem="joinorder", workload=Workload((query,)), statistics=Statistics(rates=rates),
                    name="stock-test")


@pytest.mark.spark
def test_driver_runs_every_plan_to_the_brute_force_matches(spark):
    from cepopt.pipeline import execute
    from cepopt.solve import build_problem, solve

    ev = generate(seed=5, events=500, symbols=4)
    q = Query(pattern("negation", 4, seed=2, symbols=4).pattern, Window(240), where=(
        Condition(AttrRef("difference", "e0"), "<", AttrRef("difference", "e2")),), name="neg")
    inst = _instance(q, {k: v for k, v in stated_rates(seed=5, symbols=4).items()})
    expected = reference_matches(q, ev)
    assert expected
    _, problem, _ = build_problem(inst)
    digests = set()
    for name in ("trivial", "dp-b"):
        plan = solve(inst, name, problem=problem).plan
        result = execute(inst, plan, ev, spark=spark, problem=problem)
        table = result.to_pandas()
        assert sorted(table["value"]) == expected
        assert set(table["aggregate"]) == {"match"}
        # Operations = the brute-force partial matches at the nodes the plan's cost counts.
        tree = join_tree(compile_query(q), plan, count_all=plan.kind == "tree")
        ref = node_counts(tree, ev)
        assert result.operations == sum(c for c, n in zip(ref, tree.nodes, strict=True) if n.counted)
        assert result.predicted_cost is not None and result.metrics["matches"] == len(expected)
        digests.add(result.digest())
    assert len(digests) == 1


@pytest.mark.spark
def test_cli_execute_and_plans_on_estimated_statistics(spark, tmp_path, capsys):
    from cepopt.cli import main
    from cepopt.executor.joinorder_driver import execute
    from cepopt.joinorder.problem import build_query
    from cepopt.solve import method
    from cepopt.syntax import format_query

    q = pattern("conjunction", 3, seed=4, symbols=5, window=300)
    path = tmp_path / "stock.json"
    rates = {t: 1.0 for t in q.pattern.event_types()}
    path.write_text(json.dumps({"problem": "joinorder", "name": "stock3", "queries": [format_query(q)],
                                "statistics": {"rates": rates}}))
    csv = tmp_path / "events.csv"
    ev = generate(seed=1, events=300, symbols=5)
    ev.to_csv(csv, index=False)
    assert main(["execute", str(path), "--stream", str(csv), "--plan", "dp-b", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["results_rows"] == len(reference_matches(q, ev)) and out["operations"] > 0
    assert main(["execute", str(path), "--stream", str(csv), "--plan", "trivial", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results_digest"] == out["results_digest"]
    # stream -> statistics -> plan -> execution (the steps the pipeline chains; the driver plans nothing)
    problem = build_query(q, estimate_statistics(q, ev), name="stock3")
    found = method("joinorder", "dp-b").fn(problem, time_limit=10, seed=0)
    plan = getattr(found, "plan", found)
    result = execute(problem, plan, spark.createDataFrame(ev), spark)
    assert result.digest() == out["results_digest"] and result.operations > 0


@pytest.mark.spark
def test_disjunction_runs_one_branch_per_conjunct(spark):
    from cepopt.model import Not, Or
    from cepopt.pipeline import execute
    from cepopt.solve import build_problem, solve

    ev = generate(seed=2, events=300, symbols=4)
    a, b, c, d = (Type(t, v) for t, v in zip(("MSFT", "GOOG", "INTC", "AAPL"), "abcd", strict=True))
    b2 = Type("GOOG", "b2")
    q = Query(Or((Seq((a, Not(d), b)), Seq((c, b2)))), Window(300),
              where=(Condition(AttrRef("difference", "a"), "<", AttrRef("difference", "b")),), name="dis")
    inst = _instance(q, stated_rates(seed=2, symbols=4))
    _, problem, _ = build_problem(inst)
    plan = solve(inst, "dp-b", problem=problem).plan
    result = execute(inst, plan, ev, spark=spark, problem=problem)
    expected = sorted(set(reference_matches(Query(Seq((a, Not(d), b)), q.window, where=q.where), ev))
                      | set(reference_matches(Query(Seq((c, b2)), q.window), ev)))
    assert sorted(result.to_pandas()["value"]) == expected and expected
