"""compile_sharon follows the partition-kernel protocol: partials of every (key, block) partition, rows
in any order, merge to the brute-force results and to the driver's execute_local, same operations."""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.executor.reference import reference_results
from cepopt.executor.results import compare_results, results_frame
from cepopt.executor.sharon_exec import compile_sharon, local_partitions, run_local
from cepopt.model import Equivalence, Query, Seq, Statistics, Type, Window, Workload
from cepopt.sharon.plan import SharonPlan

from .test_sharon_exec import plans, workloads


def run_protocol(compiled, events: pd.DataFrame, seed: int = 0) -> tuple[pd.DataFrame, Counter]:
    """The partitions of the local engine, rows shuffled, each run by the compiled plan, merged."""
    rnd = np.random.default_rng(seed)
    parts = [(i, part.iloc[rnd.permutation(len(part))].reset_index(drop=True), block)
             for i, part, block in local_partitions(compiled, events)]
    merged, metrics = run_local(compiled, parts)
    return (merged if len(merged) else results_frame([])), Counter(metrics)


def _problem(workload):
    from cepopt.sharon.problem import SharonProblem

    types = sorted({t for q in workload.queries for t in q.pattern.event_types()})
    return SharonProblem.from_workload(workload, Statistics(rates={t: 1 for t in types}))


def check(problem, plan, events, *, windows_per_block=64, seed=0, driver=True):
    from cepopt.executor.api import execute

    compiled = pickle.loads(pickle.dumps(compile_sharon(problem, plan, windows_per_block=windows_per_block)))
    got, metrics = run_protocol(compiled, events, seed)
    expected = reference_results(problem.workload, events)
    assert compare_results(expected, got) == [], str(plan)
    if driver:
        local = execute(problem, plan, events, family="sharon", engine="local", windows_per_block=windows_per_block)
        assert compare_results(local.results, got) == []
        assert (metrics["update"], metrics["combine"]) == (local.metrics["update"], local.metrics["combine"])
    return got, metrics


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_random_plans_partitions_and_blocks(data):
    workload = data.draw(workloads())
    queries = []
    for q in workload.queries:  # an equivalence on g, a GROUP-BY on h for some queries
        where = q.where + ((Equivalence("g"),) if data.draw(st.booleans()) else ())
        queries.append(Query(q.pattern, q.window, q.aggregates, where, name=q.name))
    workload = Workload(tuple(queries))
    n = data.draw(st.integers(0, 30))
    rows = [{"ts": data.draw(st.integers(0, 40)), "type": data.draw(st.sampled_from("ABCD")),
             "v": data.draw(st.integers(-5, 9)), "f": data.draw(st.sampled_from([0.5, 1.25, -2.0, 3.0, None])),
             "g": data.draw(st.sampled_from([0, 1, None]))} for _ in range(n)]
    events = pd.DataFrame(rows, columns=["ts", "type", "v", "f", "g"]).astype({"ts": "int64", "v": "int64"})
    plan = data.draw(plans(workload))
    check(_problem(workload), plan, events, windows_per_block=data.draw(st.sampled_from([1, 2, 64])),
          seed=data.draw(st.integers(0, 9)))


@pytest.mark.parametrize("method", ["nonshared", "greedy", "sharon"])
def test_bundled_instances(method):
    from cepopt.instances import load
    from cepopt.instances.streams import generate
    from cepopt.sharon.methods import greedy, sharon

    for name in ("sharon-example3", "sharon-fig4"):
        inst = load(name)
        problem = _problem(inst.workload)
        if inst.stream is not None:
            events = pd.DataFrame(list(inst.stream))
        else:
            events = generate("workload", seed=1, instance=inst, events=300)
            events["ts"] = events["ts"] * 20  # several blocks of 10 windows of 60
        plan = {"nonshared": SharonPlan.empty(), "greedy": None, "sharon": None}[method]
        if plan is None:
            plan = (greedy if method == "greedy" else sharon)(problem).plan
        for k in (1, 64):
            check(problem, plan, events, windows_per_block=k)


def test_mixed_lengths_of_one_slide_are_blocked():
    w = Workload((Query(Seq((Type("A"), Type("B"))), Window(6, 2), name="q1"),
                  Query(Seq((Type("A"), Type("B"), Type("C"))), Window(4, 2), name="q2")))
    rnd = np.random.default_rng(3)
    events = pd.DataFrame({"ts": np.sort(rnd.integers(0, 60, 80)), "type": rnd.choice(list("ABC"), 80)})
    compiled = compile_sharon(_problem(w), SharonPlan.empty(), windows_per_block=2)
    assert compiled.classes[0].windows_per_block == 3 and compiled.classes[0].length == 6
    got, _ = run_protocol(compiled, events)
    assert compare_results(reference_results(w, events), got) == []


def test_unblocked_classes():
    w = Workload((Query(Seq((Type("A"), Type("B"))), Window(100), name="q1"),
                  Query(Seq((Type("A"), Type("B"))), Window(6, 2), where=(Equivalence("g"),), name="q2")))
    events = pd.DataFrame({"ts": [1, 2, 3, 5, 8], "type": list("ABABB"), "g": [1, 1, 2, 2, 1]})
    compiled = compile_sharon(_problem(w), None)
    assert [c.windows_per_block for c in compiled.classes] == [None, 64]
    assert compiled.classes[1].keys == ("g",)
    assert compile_sharon(_problem(w), None, windows_per_block=None).classes[1].windows_per_block is None
    got, metrics = run_protocol(compiled, events)
    assert compare_results(reference_results(w, events), got) == []
    assert metrics["partitions"] == 3 and metrics["events"] == 10
