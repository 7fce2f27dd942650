"""Random valid plans (cepopt.gloria.sample): every sampled choice is a path of the candidate graph,
its plan is scored by the cost model exactly as the path weight, never below the optimum, and
executes to the brute-force results."""

from __future__ import annotations

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.gloria.cost import evaluate
from cepopt.gloria.exhaustive import brute_force
from cepopt.gloria.methods import candidate_graph
from cepopt.gloria.problem import build
from cepopt.gloria.sample import random_choice, random_plans
from cepopt.instances.gloria_generator import random_instance


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 5), st.integers(0, 10**6), st.sampled_from([0.0, 0.5]))
def test_random_plans_are_valid_paths_no_better_than_the_optimum(n, seed, kleene):
    problem = build(random_instance(n, seed, kleene=kleene, types=max(4, n - 1)))
    graph = candidate_graph(problem, "noprune")
    _, best, proven = brute_force(graph)
    rng = random.Random(seed)
    for _ in range(5):
        choice = random_choice(graph, rng)
        assert choice is not None
        weight = graph.weight(choice)
        assert math.isfinite(weight)
        assert math.isclose(float(evaluate(problem, graph.plan(choice))), weight, rel_tol=1e-9)
        if proven:
            assert weight >= best - 1e-9
    plans = random_plans(graph, 4, seed=seed)
    assert len({repr(p) for p in plans}) == len(plans) >= 1


def test_random_plans_execute_to_the_brute_force_results():
    from cepopt.executor import trend_exec
    from cepopt.executor.reference import reference_results
    from cepopt.executor.results import compare_results
    from cepopt.instances.streams import generate as stream

    inst = random_instance(4, 7, kleene=0.5, types=4)
    problem = build(inst)
    events = stream("workload", seed=7, instance=inst, events=60)
    truth = reference_results(inst.workload, events)
    assert len(truth) > 0
    plans = random_plans(candidate_graph(problem, "noprune"), 6, seed=1)
    assert len(plans) >= 2
    for plan in plans:
        got, _ = trend_exec.run_gloria(inst.workload, plan, events)
        assert compare_results(got, truth) == []
