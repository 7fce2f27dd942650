"""Trend kernels on the Spark engine (applyInPandas per partition and window block) equal the in-process
kernels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cepopt.executor import trend_exec
from cepopt.executor.results import compare_results
from cepopt.instance import load
from cepopt.model import Aggregate, AttrRef, Equivalence, Filter, Kleene, Query, Seq, Type, Window, Workload


def _run_spark(wl, policy, sdf, spark):
    """The Hamlet kernels of ``wl`` under ``policy`` on the Spark engine: (results, finished metrics)."""
    from types import SimpleNamespace

    from cepopt.executor.engines import run_spark
    from cepopt.executor.trend_exec import compile_hamlet

    compiled = compile_hamlet(SimpleNamespace(workload=wl), policy)
    run = run_spark(compiled, sdf, spark)
    results = run.results.toPandas()
    run.results.unpersist()
    from cepopt.executor.results import parse_value, results_frame

    frame = results_frame(zip(results["query"], results["group"], results["window"], results["aggregate"],
                              map(parse_value, results["value"]), strict=True))
    return frame, compiled.finish(run.metrics)


def _stream(n=80, seed=3):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"ts": np.sort(rng.integers(0, 40, n)).astype("int64"),
                         "type": rng.choice(list("ABCB"), n), "v": rng.integers(0, 6, n),
                         "g": rng.integers(0, 2, n), "d": rng.integers(0, 2, n)})


def _workload():
    w = Window(12, 6)
    aggs = (Aggregate("COUNT"), Aggregate("SUM", "B", "v"), Aggregate("AVG", "B", "v"))
    return Workload((
        Query(Seq((Type("A"), Kleene(Type("B")))), w, aggs, (Equivalence("d"),), (AttrRef("g"),)),
        Query(Seq((Type("C"), Kleene(Type("B")))), w, aggs, (Equivalence("d"),), (AttrRef("g"),)),
        Query(Seq((Type("A"), Kleene(Type("B")), Type("C"))), w, (Aggregate("COUNT"), Aggregate("MAX", "B", "v")),
              (Filter("B", "v", "<", 5), Equivalence("d")), (AttrRef("g"),)),
    ))


@pytest.mark.spark
def test_spark_equals_in_process(spark):
    wl, events = _workload(), _stream()
    truth, _ = trend_exec.run_greta(wl, events)
    assert len(truth) > 0
    sdf = spark.createDataFrame(events)
    got, metrics = _run_spark(wl, "dynamic", sdf, spark)
    assert compare_results(got, truth) == []
    _, local = trend_exec.run_hamlet(wl, events, "dynamic")
    assert metrics["propagations"] == local["propagations"]
    assert metrics["snapshots"] == local["snapshots"]


@pytest.mark.spark
def test_execute_bundled_example(spark):
    from cepopt.hamlet.plan import HamletPlan
    from cepopt.pipeline import execute

    res = execute("hamlet-example", HamletPlan("dynamic"), spark=spark)
    frame = res.to_pandas()
    values = dict(zip(frame["query"], frame["value"], strict=True))
    assert values == {"q1": 132, "q2": 72}
    assert res.metrics["shared_bursts"] == 2
    inst = load("hamlet-example")
    _, base = trend_exec.run_hamlet(inst.workload, pd.DataFrame(list(inst.stream)), "nonshared")
    _, local = trend_exec.run_hamlet(inst.workload, pd.DataFrame(list(inst.stream)), "dynamic")
    assert res.operations == local["operations"]
    # Eq. 7 units: non-shared 31 + 27 predecessor edges; shared 18 + 25 edges (width 1), snapshots
    # x1 = 2 + 1 and x2 = (1 + 6) + (1 + 7) events read, 2 x 2 evaluations: sharing does not pay here
    assert (base["operations"], res.operations) == (58, 43 + 18 + 4)
    # the running-sum kernel's own count: one snapshot term replaces the external predecessors
    assert base["fastpath_operations"] > res.metrics["fastpath_operations"]


@pytest.mark.spark
def test_execute_replays_the_optimal_plan(spark):
    """The optimal plan of a stream (share, extend, none: 80; every per-burst policy 96) is what runs
    on Spark; on another stream it is refused with one line."""
    from cepopt.errors import CepoptError
    from cepopt.instance import from_json
    from cepopt.pipeline import execute
    from cepopt.registry import solve

    stream = [{"ts": 0, "type": "A"}, {"ts": 1, "type": "C"}] + [{"ts": t, "type": "B"} for t in range(2, 8)]
    inst = from_json({"problem": "hamlet", "name": "opt", "stream": stream, "queries": [
        "q1: RETURN COUNT(*) PATTERN SEQ(A, B+) WITHIN 8 SLIDE 4",
        "q2: RETURN COUNT(*) PATTERN SEQ(C, B+) WITHIN 8 SLIDE 4"]})
    plan = solve(inst, "optimal").plan
    res = execute(inst, plan, spark=spark)
    assert (res.predicted_cost, res.metrics["policy"]) == (80, "replay")
    assert [res.metrics[f"action_{a}"] for a in ("share", "extend", "none")] == [1, 1, 1]
    assert set(res.to_pandas()["value"]) == {63}
    with pytest.raises(CepoptError, match="not a burst the plan decided"):
        execute(inst, plan, pd.DataFrame(stream[:-1]), spark=spark)


@pytest.mark.spark
def test_gloria_driver(spark):
    from cepopt.executor.reference import reference_results
    from cepopt.pipeline import execute
    from cepopt.registry import solve

    inst = load("gloria-fig7")
    plan = solve(inst, "gloria").plan
    kinds = "F A E B C A B C D E C D F A B C D".split()
    events = pd.DataFrame({"ts": range(0, 10 * len(kinds), 10), "type": kinds})
    res = execute(inst, plan, events, spark=spark)
    assert compare_results(res.to_pandas(), reference_results(inst.workload, events)) == []
    assert res.metrics["snapshots"] > 0 and res.predicted_cost is not None


@pytest.mark.spark
def test_gloria_driver_mixed_windows_equals_in_process(spark):
    """Windows of one slide but different lengths run in one class on Spark as in process."""
    from cepopt.executor import trend_exec
    from cepopt.executor.api import execute
    from cepopt.gloria.problem import build
    from cepopt.instances.gloria_generator import random_instance
    from cepopt.instances.streams import generate as stream
    from cepopt.registry import solve

    inst = None
    for seed in range(50):  # a generated workload whose queries have windows of different lengths
        cand = random_instance(5, seed, types=5)
        if len({q.window.length for q in cand.workload}) > 1 and len({q.window.slide for q in cand.workload}) == 1:
            inst = cand
            break
    assert inst is not None
    plan = solve(inst, "cpsat").plan
    events = stream("workload", seed=1, instance=inst, events=400)
    local, local_m = trend_exec.run_gloria(inst.workload, plan, events)
    assert len(local) > 0
    res = execute(build(inst), plan, spark.createDataFrame(events), family="gloria", spark=spark)
    assert compare_results(res.to_pandas(), local) == []
    assert res.operations == local_m["operations"]


@pytest.mark.spark
def test_missing_values_from_csv_are_one_missing_value_on_spark(spark, tmp_path):
    """A CSV stream's empty cells and NaN cells are both missing: pandas reads both as NaN, Spark reads
    an empty cell as null and "NaN" as a NaN double, which Spark would group apart from null and
    compare as a number. The stream reader turns NaN into null, so the GROUP-BY partition of the
    missing g holds both kinds of events and no filter or condition holds on a missing v: Spark
    equals the brute-force oracle on the same file."""
    from cepopt.executor.reference import reference_results
    from cepopt.executor.streams import read_stream, read_stream_pandas
    from cepopt.model import AttrRef, Condition

    path = tmp_path / "missing.csv"
    path.write_text("ts,type,v,g\n0,A,1,\n1,C,1,NaN\n2,B,3,\n3,B,NaN,NaN\n4,B,5,\n5,B,,1\n6,A,0,1\n"
                    "7,B,2,NaN\n8,B,NaN,\n9,B,4,1\n")
    w, g = Window(10, 5), (AttrRef("g"),)
    wl = Workload((
        Query(Seq((Type("A"), Kleene(Type("B")))), w, (Aggregate("COUNT"), Aggregate("SUM", "B", "v")),
              (Filter("B", "v", "!=", 2), Condition(AttrRef("v", "A"), "<", AttrRef("v", "B"))), g),
        Query(Seq((Type("C"), Kleene(Type("B")))), w, (Aggregate("COUNT"),), (Filter("B", "v", "!=", 2),), g),
    ))
    truth = reference_results(wl, read_stream_pandas(path), conditions="adjacent")
    assert len(truth) > 0
    got, _ = _run_spark(wl, "dynamic", read_stream(path, spark), spark)
    assert compare_results(got, truth) == []
