"""The trend executors behind the partition-kernel protocol (executor/trend_exec.py): run as an engine
would (partitions by keys and window blocks, rows in any order), merged with ``merge_partials``, they
equal the in-process kernels and the brute-force oracle, with the same counters."""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.errors import CepoptError
from cepopt.executor import trend_exec
from cepopt.executor.partitions import empty_partials, merge_partials, window_blocks
from cepopt.executor.reference import reference_results
from cepopt.executor.results import compare_results
from cepopt.executor.trend_exec import compile_gloria, compile_hamlet, run_all
from cepopt.instance import load
from tests.executor.test_trends_gloria import cases
from tests.executor.test_trends_kernels import POLICIES, streams, streams_with_missing, workloads

COUNTERS = ("propagations", "values", "snapshots", "snapshot_reads", "evaluations", "bursts", "shared_bursts",
            "graphlets", "pred_edges", "shared_edges", "snapshot_edges", "operations", "fastpath_operations",
            "reused")


def _key(v):
    from cepopt.hamlet.scope import norm_key

    k = norm_key(v)
    return "__null__" if k is None else k


def engine(compiled, events: pd.DataFrame, seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """What an engine does: per class, replicate events into their window blocks, group by (keys,
    block), run each partition on its rows in a random order, merge every partial."""
    compiled = pickle.loads(pickle.dumps(compiled))  # broadcast
    rng = np.random.default_rng(seed)
    parts, metrics = [], Counter()
    for index, pc in enumerate(compiled.classes):
        df = events[events["type"].astype(str).isin(pc.types)].reset_index(drop=True)
        if df.empty:
            continue
        first, last = window_blocks(df["ts"].to_numpy(), pc)
        reps = np.maximum(last - first + 1, 0)
        idx = np.repeat(np.arange(len(df)), reps)
        offs = np.arange(len(idx)) - np.repeat(np.cumsum(reps) - reps, reps)
        rep = df.iloc[idx].reset_index(drop=True)
        rep["__block"] = first[idx] + offs
        gcols = []
        for i, a in enumerate(pc.keys):
            rep[f"__k{i}"] = rep[a].map(_key).astype(object) if a in rep.columns else "__null__"
            gcols.append(f"__k{i}")
        for gk, part in rep.groupby(gcols + ["__block"], sort=False):
            block = int(gk[-1] if isinstance(gk, tuple) else gk)
            part = part.drop(columns=gcols + ["__block"]).iloc[rng.permutation(len(part))].reset_index(drop=True)
            partials, m = compiled.run(index, part, block)
            parts.append(partials)
            metrics.update(m)
    frame = pd.concat(parts, ignore_index=True) if parts else empty_partials()
    return merge_partials(frame), compiled.finish(dict(metrics))


def _same_counters(got: dict, old: dict) -> None:
    for key in COUNTERS:
        if key in old:
            assert got.get(key, 0) == old[key], key


def _check_hamlet(wl, events, params=None, windows_per_block=2):
    from cepopt.hamlet.problem import compile_workload

    class P:  # a problem with the compiled classes (what build() gives, without bursts)
        workload = wl
        classes = compile_workload(wl, params)

    truth = reference_results(wl, events, conditions="adjacent")
    old, old_m = trend_exec.run_greta(wl, events, params)
    got, m = engine(compile_hamlet(P, None, windows_per_block=windows_per_block), events)
    assert compare_results(got, truth) == [] and compare_results(got, old) == []
    _same_counters(m, old_m)
    for pol in POLICIES:
        decisions: list = []
        old, old_m = trend_exec.run_hamlet(wl, events, pol, params, decisions=decisions)
        got, m = engine(compile_hamlet(P, pol, windows_per_block=windows_per_block), events)
        assert compare_results(got, truth) == [], pol
        _same_counters(m, old_m)
        assert m.get("predicted", 0.0) == pytest.approx(sum(d.cost for d in decisions))
        assert {k[7:]: v for k, v in m.items() if k.startswith("action_")} == Counter(d.action for d in decisions)


@settings(max_examples=12, deadline=None)
@given(workloads(), streams(), st.sampled_from([1, 2, 64]))
def test_hamlet_partitions_equal_kernels_and_brute_force(wl, events, k):
    _check_hamlet(wl, events, windows_per_block=k)


@settings(max_examples=8, deadline=None)
@given(workloads(), streams_with_missing())
def test_hamlet_partitions_with_missing_values(wl, events):
    _check_hamlet(wl, events)


def test_bundled_hamlet_instance():
    from cepopt.hamlet.plan import HamletPlan
    from cepopt.registry import build_problem, solve

    inst = load("hamlet-example")  # bursts given in params: its optimal plan is a policy
    _, problem, _ = build_problem(inst, None)
    events = pd.DataFrame(list(inst.stream))
    for plan in ("nonshared", "static", "dynamic", HamletPlan("exhaustive"), solve(inst, "optimal").plan):
        pol = plan if isinstance(plan, str) else plan.policy
        old, old_m = trend_exec.run_hamlet(inst.workload, events, pol, inst.params)
        got, m = engine(compile_hamlet(problem, plan), events)
        assert compare_results(got, old) == []
        _same_counters(m, old_m)


def test_replay_of_the_optimal_plan():
    from cepopt.instance import from_json
    from cepopt.registry import build_problem, solve

    stream = [{"ts": 0, "type": "A"}, {"ts": 1, "type": "C"}] + [{"ts": t, "type": "B"} for t in range(2, 8)]
    inst = from_json({"problem": "hamlet", "name": "opt", "stream": stream, "queries": [
        "q1: RETURN COUNT(*) PATTERN SEQ(A, B+) WITHIN 8 SLIDE 4",
        "q2: RETURN COUNT(*) PATTERN SEQ(C, B+) WITHIN 8 SLIDE 4"]})
    _, problem, _ = build_problem(inst, None)
    plan = solve(inst, "optimal").plan
    got, m = engine(compile_hamlet(problem, plan, windows_per_block=1), pd.DataFrame(stream))
    assert (m["predicted"], m["policy"]) == (80, "replay")
    assert [m[f"action_{a}"] for a in ("share", "extend", "none")] == [1, 1, 1]
    assert set(got["value"]) == {63}
    for other in (stream[:-1], stream + [{"ts": 9, "type": "A"}, {"ts": 10, "type": "B"}]):
        with pytest.raises(CepoptError, match="not a burst the plan decided|the stream has"):
            engine(compile_hamlet(problem, plan), pd.DataFrame(other))


@pytest.mark.parametrize("name", ["gloria-e6", "gloria-e7", "gloria-fig7", "gloria-kleene"])
def test_bundled_gloria_instances(name):
    from cepopt.instances.streams import generate
    from cepopt.registry import build_problem, solve

    inst = load(name)
    _, problem, _ = build_problem(inst, None)
    # Brute force enumerates every trend: exponential in a Kleene query's matches, so short streams
    # (on 300 events the oracle takes 16 s for gloria-e7 and 11 s for gloria-e6; on 200, 1-2 s).
    length = {"gloria-kleene": 80, "gloria-e6": 200, "gloria-e7": 200}.get(name, 300)
    events = generate("workload", seed=2, instance=inst, events=length)
    truth = reference_results(inst.workload, events)
    for plan in (None, solve(inst, "greedy").plan, solve(inst, "gloria").plan):
        old, old_m = trend_exec.run_gloria(inst.workload, plan, events)
        for k in (1, 64):
            got, m = engine(compile_gloria(problem, plan, windows_per_block=k), events)
            assert compare_results(got, truth) == [] and compare_results(got, old) == []
            _same_counters(m, old_m)
            assert m["greta_queries"] == old_m["greta_queries"]


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_random_gloria_plans(data):
    wl, plan, events = data.draw(cases())

    class P:
        workload = wl

    truth = reference_results(wl, events)
    old, old_m = trend_exec.run_gloria(wl, plan, events)
    got, m = engine(compile_gloria(P, plan, windows_per_block=data.draw(st.sampled_from([1, 3]))), events)
    assert compare_results(got, truth) == []
    _same_counters(m, old_m)


def test_run_all_is_the_in_process_path():
    inst = load("hamlet-example")
    from cepopt.registry import build_problem

    _, problem, _ = build_problem(inst, None)
    events = pd.DataFrame(list(inst.stream))
    got, m = run_all(compile_hamlet(problem, "dynamic"), events)
    old, old_m = trend_exec.run_hamlet(inst.workload, events, "dynamic", inst.params)
    assert compare_results(got, old) == []
    _same_counters(m, old_m)
