"""The cases of issue 30 (item 6, item 8), shrunk to run in seconds: each failed before the fix (a
time-out with no plan or an empty one, a refusal after counting everything, a memory blow-up, a DP that
filled its tables past the deadline, starts run past it). The default run asserts what a time-out
returns and, with a fake clock (:mod:`cepopt.clock`), that a step stops at its deadline; the wall times
against the limit are the benchmark at the end (``pytest -m bench``; the project keeps wall-clock
assertions out of the default run). Every exact method of every family on a fake clock:
``test_time_limit_clock.py``."""

from __future__ import annotations

import time
import tracemalloc

import pytest

from cepopt.cli import main
from cepopt.clock import TickingClock, use_clock
from cepopt.registry import build_problem, solve


def _generate(tmp_path, family: str, *args: str) -> str:
    path = str(tmp_path / f"{family}.json")
    assert main(["generate", family, *args, "-o", path]) == 0
    return path


def _timed(path: str, method: str, limit: float, params: dict | None = None):
    """(solution, wall seconds of the method alone: the problem is built before the clock starts)."""
    _, problem, _ = build_problem(path, params)
    start = time.perf_counter()
    sol = solve(path, method, time_limit=limit, params=params, problem=problem)
    return sol, time.perf_counter() - start


# ------------------------------------------------------------------------------------------ Sharon
@pytest.fixture(scope="module")
def sharon_dense(tmp_path_factory):
    """Long queries whose expanded graph is huge (the issue's 300 queries, length 12, halved): the graph
    methods used to return the empty plan with no bound."""
    path = _generate(tmp_path_factory.mktemp("sharon"), "sharon", "--queries", "150", "--length", "12",
                     "--seed", "4242")
    greedy = solve(path, "greedy", params={"expand": False})  # GWMIN on the original graph: GO
    return path, greedy


@pytest.mark.parametrize("method", ["cpsat", "milp", "exhaustive", "sharon", "bruteforce"])
def test_sharon_graph_methods_return_greedy_and_a_bound_within_the_limit(sharon_dense, method):
    path, greedy = sharon_dense
    sol = solve(path, method, time_limit=1.0)
    assert sol.plan is not None and sol.objective >= greedy.objective > 0, (sol.status, sol.message)
    assert sol.bound is not None and sol.bound >= sol.objective, sol.message


def test_sharon_milp_on_a_graph_too_dense_for_maximal_cliques(sharon_dense):
    """With the expanded graph built (before the clock), milp's model over maximal cliques needed adjacency
    lists over their cap and the method ended in an error: it falls back on the cell cliques."""
    path, greedy = sharon_dense
    _, problem, _ = build_problem(path)
    assert len(problem.graph) > 5000  # built, cells and cliques aside
    sol = solve(path, "milp", time_limit=2.0, problem=problem)
    assert sol.status != "error" and sol.objective >= greedy.objective, sol.message
    assert sol.stats["extend"].startswith("off")


def test_sharon_gain_bounds_hold_over_every_option_set(sharon_dense):
    path, _ = sharon_dense
    _, problem, _ = build_problem(path)
    exact = solve(path, "cpsat-compact", time_limit=60, problem=problem)
    assert exact.status == "optimal"
    assert problem.query_bound() >= problem.cell_bound() >= exact.objective


def test_counting_options_stops_at_the_cap():
    """Refusing a graph over max_vertices counted every option first: 2^3000-sized sums of binomials."""
    from cepopt.sharon.expansion import count_options

    assert count_options(12, 5) == 2**5 and count_options(4, 4) == 1 + 4 + 6
    start = time.perf_counter()
    assert count_options(5000, 5000, cap=1000) > 1000
    assert time.perf_counter() - start < 0.05
    assert count_options(5000, 5000, cap=10**1600) == count_options(5000, 5000)  # exact below the cap


# ------------------------------------------------------------------------------------------ Hamlet
def test_hamlet_optimal_counts_before_it_lists(tmp_path):
    """40 candidates per burst listed 2^40 options (6 GB, MemoryError); 20 listed 2^20 and refused."""
    path = _generate(tmp_path, "hamlet", "--queries", "20", "--burst", "40", "--events", "5000", "--seed", "4242",
                     "--bursts")
    _, problem, _ = build_problem(path)
    dynamic = solve(path, "dynamic", problem=problem)
    tracemalloc.start()
    try:
        sol = solve(path, "optimal", time_limit=2.0, problem=problem)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sol.status == "feasible" and "max_sequences" in sol.message
    assert sol.plan is not None and sol.objective <= dynamic.objective
    assert peak < 30 * 2**20, peak


# ------------------------------------------------------------------------------------------ join order
@pytest.fixture(scope="module")
def warm_kernels(tmp_path_factory):
    """Import the compiled DPs once (numba's import is not interrupted: not what these tests measure)."""
    path = _generate(tmp_path_factory.mktemp("warm"), "joinorder", "--size", "6")
    solve(path, "dp-ld")
    solve(path, "dp-b")


@pytest.fixture(scope="module")
def join23(tmp_path_factory, warm_kernels):
    return _generate(tmp_path_factory.mktemp("join"), "joinorder", "--size", "23", "--seed", "1")


@pytest.mark.parametrize("method", ["dp-b", "milp-tree", "dp-ld"])
def test_join_order_dps_return_their_start_on_a_time_out(join23, method):
    """dp-b and milp-tree (13.8 s and 20.5 s for 2 s at n = 24, milp-tree then refusing) and dp-ld (no plan)
    out of time: a plan no worse than their start, GREEDY's order or ZStream over it."""
    sol = solve(join23, method, time_limit=0.01)  # compiling is outside it: n = 23 can be proven in 0.2 s
    assert sol.plan is not None and sol.status == "feasible", (sol.status, sol.message)
    start = solve(join23, "greedy" if method == "dp-ld" else "zstream-ord")
    assert sol.objective <= start.objective + 1e-9


@pytest.mark.parametrize("method", ["dp-b", "milp-tree"])
def test_join_order_tables_stop_at_the_deadline(tmp_path, monkeypatch, method, warm_kernels):
    """With the deadline passed at the first look at the clock, the tables over 2^n subsets (node costs,
    outside bounds) are not finished: they used to be, whatever the limit."""
    from cepopt.joinorder import dp_fast

    finished = []
    outside = dp_fast._outside
    # the instance's tables only (not the 3-event warm-up that loads the compiled kernels first)
    monkeypatch.setattr(dp_fast, "_outside", lambda conj, *a, **k: finished.append(conj.n) or outside(conj, *a, **k))
    path = _join(tmp_path, 16, "paper", 1)
    _, problem, _ = build_problem(path)
    with use_clock(TickingClock(step=10.0)):
        sol = solve(path, method, time_limit=1.0, problem=problem)
    assert sol.plan is not None and sol.status == "feasible" and 16 not in finished, sol.message


def _join(tmp_path, size: int, preset: str, seed: int) -> str:
    return _generate(tmp_path, "joinorder", "--size", str(size), "--preset", preset, "--seed", str(seed))


def test_milp_order_starts_stop_at_the_deadline(tmp_path, monkeypatch, warm_kernels):
    """milp-order's starts (II-GREEDY for 1 s, the window DP for 2 s) and its sparse DP ran past a 10 s
    limit (14.4 s): each step now gets a deadline no later than the method's."""
    from cepopt.formulations import joinorder as formulation

    clock = TickingClock(step=1e-3)
    given = []
    window = formulation.window_dp
    monkeypatch.setattr(formulation, "window_dp", lambda c, o, deadline=None: given.append(deadline) or window(
        c, o, deadline=deadline))
    path = _join(tmp_path, 30, "hard", 1)
    _, problem, _ = build_problem(path)
    with use_clock(clock):
        sol = solve(path, "milp-order", time_limit=0.5, problem=problem)
    assert sol.plan is not None and sol.bound is not None and sol.bound <= sol.objective
    assert given and all(d <= 0.5 + 0.01 for d in given), given  # the fake clock started at 0


def test_dp_b_time_out_starts_from_the_left_deep_dp_ld_tree(tmp_path, monkeypatch, warm_kernels):
    """hard n = 8, seed 3: the left-deep tree of DP-LD's optimal order (tree cost 4.9007) beats ZStream over
    GREEDY's and the declared orders (4.9402); a dp-b time-out returned the worse one."""
    from cepopt.joinorder import dp_fast
    from cepopt.joinorder.cost import log_cost_tree
    from cepopt.joinorder.dp import DpTimeout
    from cepopt.joinorder.dp_ld_fast import dp_ld_fast

    path = _join(tmp_path, 8, "hard", 3)
    _, problem, _ = build_problem(path)
    c = problem.conjuncts[0]
    order, _ = dp_ld_fast(c)
    tree = order[0]
    for x in order[1:]:
        tree = (tree, x)
    left_deep = log_cost_tree(c, tree)

    pruned = dp_fast.dp_b_pruned

    def out_of_time(conj, *args, **kwargs):
        if conj.n <= 3:  # the warm-up that loads the compiled kernel before the deadline starts
            return pruned(conj, *args, **kwargs)
        raise DpTimeout

    monkeypatch.setattr(dp_fast, "dp_b_pruned", out_of_time)
    sol = solve(path, "dp-b", time_limit=60, params={"compile_from": 2}, problem=problem)  # the compiled path
    assert sol.status == "feasible" and sol.objective <= left_deep + 1e-12
    assert sol.objective < solve(path, "zstream-ord", problem=problem).objective


def test_dp_b_upper_bound_log_is_an_upper_bound(tmp_path, warm_kernels):
    """stats.upper_bound_log was the start tree's internal nodes only: below the optimum it bounds."""
    for seed in (0, 1):
        sol = solve(_join(tmp_path, 10, "paper", seed), "dp-b", params={"compile_from": 2})  # the pruned DP
        assert sol.status == "optimal" and sol.stats["upper_bound_log"] >= sol.objective - 1e-12


def test_milp_tree_bound_is_the_proven_one(tmp_path):
    """On the hard preset the flow model's proof holds to the solver's precision (1e-8 in ln cost): the
    bound was the objective, above stats.lower_bound_log_cost; it is that proven bound now."""
    below = 0
    for seed in (0, 1, 2):
        sol = solve(_join(tmp_path, 8, "hard", seed), "milp-tree")
        assert sol.status == "optimal"
        assert sol.bound <= sol.stats["lower_bound_log_cost"] + 1e-12 and sol.bound <= sol.objective
        below += sol.bound < sol.objective
    assert below  # the case of the issue is among them


def test_milp_tree_compact_status_follows_the_proof_tolerance(tmp_path):
    """model=compact stopped at its limit as "feasible" with a gap of 1e-13..6e-10 (ln cost), where the
    module says a gap <= 1e-9 is "optimal"."""
    from cepopt.formulations.joinorder import _PROOF_GAP

    sol = solve(_join(tmp_path, 7, "paper", 0), "milp-tree", time_limit=1.0,
                params={"model": "compact", "max_iters": 1})
    assert sol.plan is not None and sol.bound is not None and sol.bound <= sol.objective
    gap = sol.objective - sol.bound
    assert (sol.status == "optimal") == (gap <= _PROOF_GAP), (sol.status, gap)
    assert gap <= _PROOF_GAP  # the issue's case: the limit stops the loop with the gap closed


@pytest.mark.bench
@pytest.mark.parametrize("case", ["sharon:cpsat", "sharon:milp", "sharon:exhaustive", "join:dp-b", "join:milp-tree",
                                  "join:dp-ld", "order:milp-order"])
def test_wall_time_of_the_issue_cases(case, sharon_dense, join23, tmp_path):
    """Benchmark (``pytest -m bench -s tests/test_time_limit_cases.py``): wall time of the method alone
    against its limit. Measured on 2 cores, old -> new in the same run: at load 10-16, dp-b n = 23, 0.2 s:
    8.1 -> 0.2 s; milp-tree n = 22, 0.1 s: 3.0 s (then refusing) -> 0.3 s; milp-order hard n = 60, 1 s:
    2.3 -> 1.3 s; sharon 150 long queries, 1 s: no plan -> GWMIN's and the gain bound in 1.1-1.3 s. At
    load 7, ``cepopt solve`` (method time): n = 24 dp-b 2 s: 5.4 -> 2.6 s, milp-tree 2 s: 6.8 s (error) ->
    2.1 s (the start tree); sharon 300 queries length 12, cpsat 2 s: objective 0, no bound -> 34,136 with
    bound 85,427 in 2.1 s."""
    family, method = case.split(":")
    path, limit = {"sharon": (sharon_dense[0], 1.0), "join": (join23, 0.2),
                   "order": (_join(tmp_path, 60, "hard", 1), 1.0)}[family]
    sol, wall = _timed(path, method, limit)
    print(f"\n{case}: {sol.status}, wall {wall:.2f} s for a {limit} s limit")
    assert wall <= limit + 1.5, (wall, sol.message)
