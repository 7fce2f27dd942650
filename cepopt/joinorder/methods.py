"""The ``joinorder`` family: CEP plan generation as join ordering (Kolchinsky & Schuster, PVLDB 2018).

Problem: one query (SEQ/AND/OR/NOT/KL) with rates per event type and selectivities per variable pair,
reduced to pure conjunctions (§5; :mod:`cepopt.joinorder.reduce`, :mod:`cepopt.joinorder.problem`).
Plans: :class:`~cepopt.joinorder.plans.Order` or :class:`~cepopt.joinorder.plans.Tree` (a
:class:`~cepopt.joinorder.plans.Disjunction` of them for an OR pattern).

**Objective: ``log_cost`` = ln(Cost(plan))**, natural log, minimised. The costs reach 2^(rW) with a
Kleene event (rW >= 1200 in the paper's setting), far beyond a float, while their logs stay small.
Cost is Cost_ord for an Order and Cost_tree for a Tree (``--param cost=ldj|bj|ord|tree`` chooses
another, ``alpha`` adds latency), see :mod:`cepopt.joinorder.cost`. Because the objective is a log,
a Solution's ``gap`` is a relative gap *of the logs*; methods with a proven bound also report
``stats["cost_ratio"]`` = Cost(plan) / lower bound on the optimal cost (1.0 when optimal) and
``stats["cost_gap"]`` = 1 - 1/cost_ratio, the usual relative gap of the costs.

Methods (plan kind): trivial, efreq, greedy, ii-random, ii-greedy, dp-ld (order); zstream, zstream-ord,
dp-b (tree); milp-order, cpsat-order (order); milp-tree (tree); bruteforce (``plan=order|tree``).
Exact: dp-ld, dp-b, milp-order, milp-tree, bruteforce. An exact method reports "optimal" unless the
pattern has several DNF conjuncts *and* a latency term (the max over conjuncts couples them).

``--param seq_temporal=exact`` [R-SEQ-EXACT] prices a node's SEQ order by 1/k!, which is not a product
of pairwise selectivities. Every method over the subset costs PM(S) honours it (trivial, efreq,
greedy, ii-*, dp-ld, dp-b, zstream*, bruteforce); the solver models (milp-order, milp-tree,
cpsat-order) encode pairwise selectivities only and refuse a pattern whose order term is not trivial
(status "error" in ``compare``), as the problem builder refuses cost ldj/bj.

``--param cross_products=avoid`` (:mod:`cepopt.joinorder.graph`) keeps the plans whose every join has a
predicate between its inputs; the cost model refuses any other plan, so every method stays sound. Exact
in that space: dp-ccp-ld, ikkbz (order) and dp-ccp (tree), which refuse the CEP rule, and bruteforce.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Annotated, Any, Literal

import numpy as np

from cepopt.clock import Deadline, TimeLimitReached, now, remaining
from cepopt.errors import MethodLimitError
from cepopt.joinorder import bruteforce as _bf
from cepopt.joinorder import cost
from cepopt.joinorder.cost import left_deep_indices, log_cost_tree, logsumexp
from cepopt.joinorder.dp import DpTimeout, dp_b, dp_ld
from cepopt.joinorder.efreq import efreq
from cepopt.joinorder.graph import adjacency
from cepopt.joinorder.greedy import greedy
from cepopt.joinorder.ii import ii
from cepopt.joinorder.negation import order_plan, tree_plan
from cepopt.joinorder.plans import Disjunction, plan_from_json, plan_to_json
from cepopt.joinorder.problem import PROBLEM_OPTIONS, Conjunct, JoinOrderProblem, build
from cepopt.joinorder.trivial import trivial
from cepopt.joinorder.zstream import zstream
from cepopt.params import Bound, PositiveInt, Workers
from cepopt.registry import Family, declare, register
from cepopt.solution import MethodResult

__all__ = ["FAMILY", "PAIRWISE_ONLY", "baseline_plan"]

#: the methods whose models price pairwise selectivities only: they refuse seq_temporal="exact"
PAIRWISE_ONLY = ("milp-order", "milp-tree", "cpsat-order")

NAME = "joinorder"

#: the outer-approximation loop's relative gap: ln(1 - tol) is finite for 0 <= tol < 1 only
Tolerance = Annotated[float, Bound(">=", 0), Bound("<", 1)]
#: cpsat-order's integer scale: the coefficients round(scale * log) must stay well inside 64 bits
Scale = Annotated[float, Bound(">", 0), Bound("<=", 1e9)]


def baseline_plan(problem: JoinOrderProblem):
    """The TRIVIAL order (pattern order) of every conjunct."""
    return _assemble([order_plan(c, trivial(c.n)) for c in problem.conjuncts])


FAMILY = declare(Family(
    name=NAME,
    description="CEP evaluation plan (order or bushy tree) as join ordering (Kolchinsky & Schuster)",
    build=build,
    cost=cost,
    plan_to_json=plan_to_json,
    plan_from_json=lambda problem, value: plan_from_json(value),
    problem_options=PROBLEM_OPTIONS,
    default_methods=("trivial", "efreq", "greedy", "ii-random", "ii-greedy", "dp-ld", "zstream",
                     "zstream-ord", "dp-b", "milp-order", "cpsat-order", "milp-tree"),
    baseline_plan=baseline_plan,
))


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def _assemble(plans: list):
    return plans[0] if len(plans) == 1 else Disjunction(tuple(plans))


def _deadline(time_limit: float | None) -> float | None:
    return Deadline.after(time_limit).at


def _remaining(deadline: float | None) -> float | None:
    return remaining(deadline)


def _order_method(problem: JoinOrderProblem, one: Callable[[Conjunct], list[int]], *, exact: bool = False,
                  stats: dict | None = None) -> MethodResult:
    """Run an order algorithm on every conjunct; the tree cost of the left-deep tree when the problem's
    cost is tree/bj."""
    plans = [order_plan(c, one(c)) for c in problem.conjuncts]
    return _result(problem, plans, exact, stats)


def _tree_method(problem: JoinOrderProblem, one: Callable[[Conjunct], Any], *, exact: bool = False,
                 stats: dict | None = None) -> MethodResult:
    problem.tree_cost("tree")  # raises for cost=ord/ldj
    plans = [tree_plan(c, one(c)) for c in problem.conjuncts]
    return _result(problem, plans, exact, stats)


def _result(problem: JoinOrderProblem, plans: list, exact: bool, stats: dict | None,
            solver_values: list[float] | None = None) -> MethodResult:
    coupled = len(problem.conjuncts) > 1 and problem.alpha > 0
    status = "optimal" if exact and not coupled else "feasible"
    solver_objective = None
    if solver_values is not None and not (len(problem.conjuncts) > 1 and problem.alpha > 0):
        solver_objective = logsumexp(solver_values)
    out = dict(stats or {})
    if status == "optimal":
        out.setdefault("cost_ratio", 1.0)
        out.setdefault("cost_gap", 0.0)
    return MethodResult(plan=_assemble(plans), status=status, solver_objective=solver_objective, stats=out)


def _tree_ld(problem: JoinOrderProblem) -> bool:
    return problem.tree_cost("order")


def _pairwise_only(problem: JoinOrderProblem, name: str) -> None:
    """Refuse the [R-SEQ-EXACT] order term in a model that prices pairwise selectivities only
    (every method of :data:`PAIRWISE_ONLY` calls this)."""
    assert name in PAIRWISE_ONLY, name
    if not all(c.pairwise for c in problem.conjuncts):
        raise MethodLimitError(f"{name}: seq_temporal 'exact' prices a node's SEQ order by 1/k!, which "
                               "is no product of pairwise selectivities and not in this model; use "
                               "dp-ld, dp-b or bruteforce, or another seq_temporal")


# ---------------------------------------------------------------------------------------------
# The paper's algorithms
# ---------------------------------------------------------------------------------------------


@register(NAME, "trivial", "TRIVIAL (§7.1): the pattern's declared order, as SASE/Cayuga")
def _trivial(problem, *, time_limit=None, seed=0):
    return _order_method(problem, lambda c: trivial(c.n))


@register(NAME, "efreq", "EFREQ (§7.1): ascending arrival rate (Kleene: rewritten rate)")
def _efreq(problem, *, time_limit=None, seed=0):
    return _order_method(problem, lambda c: efreq(c.lc))


@register(NAME, "greedy", "GREEDY (§7.1, Swami): next event minimising the next prefix's cost")
def _greedy(problem, *, time_limit=None, seed=0):
    return _order_method(problem, greedy)


def _ii(problem, start: Callable[[Conjunct, Any], list[int]], time_limit, seed, restarts, max_evals,
        neighbour_order, mode):
    tree_ld = _tree_ld(problem)
    deadline = _deadline(time_limit)
    rng = np.random.default_rng(seed)

    def one(c: Conjunct) -> list[int]:
        return ii(c, start(c, rng), seed=int(rng.integers(2**31)), neighbour_order=neighbour_order,
                  restarts=restarts, max_evals=max_evals, time_limit=_remaining(deadline), mode=mode,
                  tree_ld=tree_ld)

    return _order_method(problem, one, stats={"restarts": restarts, "neighbour_order": neighbour_order,
                                              "mode": mode})


@register(NAME, "ii-random", "II-RANDOM (§7.1, Swami): swap/3-cycle local search from a random order")
def _ii_random(problem, *, time_limit=None, seed=0, restarts: PositiveInt = 1, max_evals: PositiveInt | None = None,
               neighbour_order="random", mode="local_min"):
    return _ii(problem, lambda c, rng: [int(x) for x in rng.permutation(c.n)], time_limit, seed, restarts,
               max_evals, neighbour_order, mode)


@register(NAME, "ii-greedy", "II-GREEDY (§7.1, Swami): swap/3-cycle local search from GREEDY's order")
def _ii_greedy(problem, *, time_limit=None, seed=0, restarts: PositiveInt = 1, max_evals: PositiveInt | None = None,
               neighbour_order="random", mode="local_min"):
    return _ii(problem, lambda c, rng: greedy(c), time_limit, seed, restarts, max_evals, neighbour_order, mode)


#: dp-ld and dp-b run their compiled (Numba) kernels from this many events on, the plain NumPy DP below it:
#: below it the NumPy DP takes milliseconds, less than loading the compiled kernels into a new process
COMPILE_FROM = 12


def _compile_stats(warm: Callable[[], float]) -> dict:
    """``{"compile_s": seconds}`` spent by ``warm`` (loading or compiling the kernels a method is about to
    use), reported apart from the search and outside its time limit; empty when nothing was compiled."""
    seconds = warm()
    return {"compile_s": round(seconds, 6)} if seconds else {}


def _dp_limit(name: str, problem: JoinOrderProblem, max_n: int) -> None:
    n = max(c.n for c in problem.conjuncts)
    if n > max_n:
        raise MethodLimitError(f"{name}: {n} events is beyond max_n={max_n} (memory/time grow like "
                               f"{'2^n' if name == 'dp-ld' else '3^n'}; raise max_n to try)")


@register(NAME, "dp-ld", "DP-LD (§7.1, Selinger): exact left-deep DP over subsets, O(n 2^n); compiled from "
          "compile_from events on, with exact upper-bound pruning (throughput cost)", exact=True)
def _dp_ld(problem, *, time_limit=None, seed=0, max_n: PositiveInt = 26, compile_from: PositiveInt = COMPILE_FROM):
    _dp_limit("dp-ld", problem, max_n)
    tree_ld = _tree_ld(problem)
    from cepopt.joinorder.dp_ld_fast import fast_applies, warm_kernels

    def fast(c: Conjunct) -> bool:
        return c.n >= compile_from and fast_applies(c, tree_ld)

    compiled = [c.n for c in problem.conjuncts if fast(c)]
    stats = _compile_stats(lambda: warm_kernels(max(compiled)) if compiled else 0.0)
    deadline = _deadline(time_limit)  # after the kernels are compiled: the limit measures the search
    values: list[float] = []
    try:
        plans = [order_plan(c, _optimal_order(c, tree_ld, deadline, values, fast(c))) for c in problem.conjuncts]
    except TimeLimitReached as exc:
        # GREEDY's orders (what the pruning started from), no bound: a time-out is never less than greedy
        plans = [order_plan(c, greedy(c)) for c in problem.conjuncts]
        return MethodResult(plan=_assemble(plans), status="feasible",
                            message=f"dp-ld: {exc}; GREEDY's order (no bound)", stats=stats)
    return _result(problem, plans, True, stats, values)


def _optimal_order(c: Conjunct, tree_ld: bool, deadline: float | None, values: list[float],
                   compiled: bool) -> list[int]:
    """DP-LD's optimal order of one conjunct (its log cost appended to ``values``), by the compiled kernel
    or the plain DP; TimeLimitReached past ``deadline``."""
    from cepopt.joinorder.dp_ld_fast import dp_ld_fast

    if compiled:
        order, value = dp_ld_fast(c, ub=cost.log_cost_ord(c, greedy(c)), deadline=deadline)
    else:
        order, value = dp_ld(c, tree_ld=tree_ld, deadline=deadline)
    values.append(value)
    return order


#: the share of dp-b's time the left-deep DP (its start tree) may take
DP_B_LEFT_DEEP_SHARE = 0.25


def _left_deep_start(c: Conjunct, deadline: float | None, compile_from: int) -> list:
    """The left-deep tree of DP-LD's optimal order (Cost_ord; its left-deep tree is priced like it), as a
    start of DP-B: [] when the DP does not finish in time (at most a share of what is left)."""
    from cepopt.joinorder.dp_ld_fast import fast_applies

    if not fast_applies(c) or c.n > 26:
        return []
    left = remaining(deadline, 0.0)
    try:
        order = _optimal_order(c, False, None if left is None else now() + DP_B_LEFT_DEEP_SHARE * left, [],
                               c.n >= compile_from)
    except TimeLimitReached:
        return []
    return [left_deep_indices(order)]


@register(NAME, "dp-b", "DP-B (§7.1, Selinger): exact bushy-tree DP over subsets, O(3^n); compiled from "
          "compile_from events on, with exact upper-bound pruning (throughput cost)", exact=True)
def _dp_b(problem, *, time_limit=None, seed=0, max_n: PositiveInt = 24, compile_from: PositiveInt = COMPILE_FROM):
    """Starts (upper bounds, and the answer of a time-out): ZStream over GREEDY's and the declared orders
    and the left-deep tree of DP-LD's optimum (:func:`_left_deep_start`)."""
    _dp_limit("dp-b", problem, max_n)
    problem.tree_cost("tree")
    from cepopt.joinorder.dp_fast import dp_b_pruned, warm_kernels

    def plain(c: Conjunct) -> bool:
        return c.n < compile_from or c.has_latency or c.next_match

    def warm() -> float:  # DP-B's kernel, and DP-LD's for the left-deep start (_left_deep_start)
        from cepopt.joinorder.dp_ld_fast import warm_kernels as warm_left_deep

        compiled = [c.n for c in problem.conjuncts if not plain(c)]
        return warm_kernels() + warm_left_deep(max(compiled)) if compiled else 0.0

    stats = _compile_stats(warm)
    deadline = _deadline(time_limit)  # after the kernels are compiled: the limit measures the search
    values: list[float] = []
    starts = {id(c): _good_trees(c) for c in problem.conjuncts}

    def one(c: Conjunct):
        if plain(c):
            tree, value = dp_b(c, deadline=deadline)
        else:
            starts[id(c)] += _left_deep_start(c, deadline, compile_from)
            tree, value, found = dp_b_pruned(c, starts[id(c)], deadline=deadline)
            for key, v in found.items():
                stats[key] = stats.get(key, 0) + v if key != "upper_bound_log" else v
        values.append(value)
        return tree

    try:
        plans = [tree_plan(c, one(c)) for c in problem.conjuncts]
    except TimeLimitReached:
        return _tree_timeout(problem, "dp-b", starts)
    solver = values if problem.cost != "bj" else None
    return _result(problem, plans, True, stats, solver)


def _good_trees(c: Conjunct) -> list:
    """Cheap good trees (the upper bounds of DP-B's pruning, the start of the models): ZStream over
    GREEDY's order and over the declared order."""
    return [zstream(c, greedy(c))[0], zstream(c, trivial(c.n))[0]]


def _tree_timeout(problem: JoinOrderProblem, name: str, starts: dict | None = None) -> MethodResult:
    """The best start tree (ZStream over GREEDY's and the declared orders, and the left-deep tree of
    DP-LD's optimum when ``starts`` has it) with a valid lower bound when an exact tree method runs out
    of time: every tree pays its root and its leaves."""
    from cepopt.joinorder.cost import leaf_log, log_node

    def best(c):
        trees = (starts or {}).get(id(c)) or _good_trees(c)
        return min(trees, key=lambda t: log_cost_tree(c, t))

    plan = _assemble([tree_plan(c, best(c)) for c in problem.conjuncts])
    bound = None
    if len(problem.conjuncts) == 1 and problem.cost in ("auto", "tree"):
        c = problem.conjuncts[0]
        bound = logsumexp([log_node(c, list(range(c.n)), tree=True)] + [leaf_log(c, i) for i in range(c.n)])
    return MethodResult(plan=plan, status="feasible", bound=bound,
                        message=f"{name}: time limit reached; the best start tree (ZStream over GREEDY's or the "
                                "declared order, or the left-deep tree of DP-LD's optimum) and the bound every tree "
                                "pays (root and leaves)")


@register(NAME, "zstream", "ZSTREAM (§2.3, Mei & Madden): best tree over the pattern's leaf order, O(n^3)")
def _zstream(problem, *, time_limit=None, seed=0):
    return _tree_method(problem, lambda c: zstream(c, trivial(c.n))[0])


@register(NAME, "zstream-ord", "ZSTREAM-ORD (§7.1): ZSTREAM over GREEDY's leaf order")
def _zstream_ord(problem, *, time_limit=None, seed=0):
    return _tree_method(problem, lambda c: zstream(c, greedy(c))[0])


@register(NAME, "bruteforce", "every order (n <= 9) or every bushy tree (n <= 8); plan=order|tree",
          exact=True)
def _bruteforce(problem, *, time_limit=None, seed=0, plan: Literal["order", "tree"] = "order"):
    n = max(c.n for c in problem.conjuncts)
    if plan == "order":
        if n > _bf.MAX_ORDER_N:
            raise MethodLimitError(f"bruteforce: {n}! orders is beyond the limit n <= {_bf.MAX_ORDER_N}")
        tree_ld = _tree_ld(problem)
        values: list[float] = []

        def one(c):
            order, value = _bf.best_order(c, tree_ld=tree_ld)
            values.append(value)
            return order

        return _result(problem, [order_plan(c, one(c)) for c in problem.conjuncts], True, None,
                       values if problem.cost not in ("ldj",) else None)
    if n > _bf.MAX_TREE_N:
        raise MethodLimitError(f"bruteforce: (2n-3)!! trees is beyond the limit n <= {_bf.MAX_TREE_N}")
    problem.tree_cost("tree")
    tvalues: list[float] = []

    def one_tree(c):
        tree, value = _bf.best_tree(c)
        tvalues.append(value)
        return tree

    return _result(problem, [tree_plan(c, one_tree(c)) for c in problem.conjuncts], True, None,
                   tvalues if problem.cost != "bj" else None)


# ---------------------------------------------------------------------------------------------
# Solver models (formulations/joinorder.py)
# ---------------------------------------------------------------------------------------------


def _model_method(problem, solve_one, kind: str, time_limit, name: str) -> MethodResult:
    if kind == "tree":
        problem.tree_cost("tree")
    deadline = _deadline(time_limit)
    plans, stats_all, statuses, ratios, solver, messages = [], [], [], [], [], []
    for c in problem.conjuncts:
        out = solve_one(c, _remaining(deadline))
        if out.plan is None:
            return MethodResult(plan=None, status=out.status, stats=out.stats, message=out.message)
        if out.message and out.message != "optimum not proven":
            messages.append(out.message)
        plans.append(order_plan(c, out.plan) if kind == "order" else tree_plan(c, out.plan))
        stats_all.append(out.stats)
        statuses.append(out.status)
        ratios.append(out.log_ratio)
        solver.append(out.solver_log)
    stats = stats_all[0] if len(stats_all) == 1 else {"conjuncts": stats_all}
    log_ratio = max(ratios)
    stats["cost_ratio"] = math.exp(log_ratio) if log_ratio < 700 else math.inf
    stats["cost_gap"] = -math.expm1(-log_ratio)
    exact = all(s == "optimal" for s in statuses)
    if all(v is not None for v in solver):
        # The MILP's own objective (tangent surrogate + constants) is cross-checked by solve().
        stats["objective_tolerance"] = 1e-6
    result = _result(problem, plans, exact, stats,
                     solver if all(v is not None for v in solver) and problem.cost in ("auto", "ord", "tree")
                     else None)
    if not exact:
        value = cost.evaluate(problem, result.plan)
        # A lower bound on the cost: each conjunct's cost divided by its proven ratio.
        return MethodResult(plan=result.plan, status="feasible", bound=value - log_ratio, stats=stats,
                            message="; ".join(messages) or f"{name}: optimum not proven within the limits")
    if log_ratio > 0 and result.status == "optimal":
        # optimal to the solver's precision (a gap below _PROOF_GAP in ln cost), not exactly: the bound
        # reported is the proven one (stats["lower_bound_log_cost"]), not the objective
        result = dataclasses.replace(result, bound=cost.evaluate(problem, result.plan) - log_ratio)
    return result


@register(NAME, "milp-order", "M-ORD (spec §7.1-7.2): prefix-set MILP with tangent (OA) cuts until the "
          "optimum is proven; backend=highs|scip|cbc; sparse_dp=true first tries the sparse bounded DP-LD under "
          "the start plan's cost (a DP proof, named in stats['proof'])", exact=True)
def _milp_order(problem, *, time_limit=None, seed=0, backend="highs", max_iters: PositiveInt = 50,
                tol: Tolerance = 0.0, root_cuts: bool = False, sparse_dp: bool = True):
    from cepopt.formulations.joinorder import solve_order_milp

    if _tree_ld(problem):
        raise MethodLimitError("milp-order: scores orders by Cost_ord; use dp-ld for cost=tree")
    _pairwise_only(problem, "milp-order")
    return _model_method(problem, lambda c, tl: solve_order_milp(
        c, time_limit=tl, seed=seed, backend=backend, max_iters=max_iters, tol=tol, root_cuts=root_cuts,
        sparse_dp=sparse_dp), "order", time_limit, "milp-order")


@register(NAME, "milp-tree", "M-BUSHY (spec §7.4): subset-flow MILP over the candidate nodes that survive DP-B's "
          "upper-bound cut (model=flow, default; exact node costs, LP = DP optimum) or the compact slot model "
          "with tangent (OA) cuts (model=compact); backend=highs|scip|cbc", exact=True)
def _milp_tree(problem, *, time_limit=None, seed=0, backend="highs", max_iters: PositiveInt = 50,
               tol: Tolerance = 0.0, model: Literal["flow", "compact"] = "flow"):
    from cepopt.formulations.joinorder import solve_tree_flow, solve_tree_milp

    _pairwise_only(problem, "milp-tree")
    if model == "flow":
        return _model_method(problem, lambda c, tl: solve_tree_flow(c, time_limit=tl, seed=seed, backend=backend),
                             "tree", time_limit, "milp-tree")
    return _model_method(problem, lambda c, tl: solve_tree_milp(
        c, time_limit=tl, seed=seed, backend=backend, max_iters=max_iters, tol=tol),
        "tree", time_limit, "milp-tree")


@register(NAME, "cpsat-order", "CP-SAT bottleneck surrogate (spec §7.3): min max_k ln PM(prefix k) "
          "scaled to integers, then min Σ_k; an (n-1)-approximation of Cost_ord")
def _cpsat_order(problem, *, time_limit=None, seed=0, workers: Workers = 2, scale: Scale = 1000.0):
    from cepopt.formulations.joinorder import solve_order_cpsat

    if _tree_ld(problem):
        raise MethodLimitError("cpsat-order: scores orders by Cost_ord; use dp-ld for cost=tree")
    _pairwise_only(problem, "cpsat-order")
    deadline = _deadline(time_limit)
    plans, stats_all, solver = [], [], []
    for c in problem.conjuncts:
        out = solve_order_cpsat(c, time_limit=_remaining(deadline), seed=seed, workers=workers,
                                scale=scale)
        if out.plan is None:
            return MethodResult(plan=None, status=out.status, stats=out.stats, message=out.message)
        plans.append(order_plan(c, out.plan))
        stats_all.append(out.stats)
        solver.append(out.solver_log)
    stats = stats_all[0] if len(stats_all) == 1 else {"conjuncts": stats_all}
    solver_objective = None
    if all(v is not None for v in solver) and problem.cost in ("auto", "ord", "ldj"):
        # solve() checks the scaled integer model's value against the cost model within this tolerance.
        solver_objective = logsumexp(solver)
        stats["objective_tolerance"] = max(s.get("objective_tolerance", 1e-6) for s in stats_all)
    return MethodResult(plan=_assemble(plans), status="feasible", stats=stats,
                        solver_objective=solver_objective)


# ---------------------------------------------------------------------------------------------
# Cross-product-free plan spaces (--param cross_products=avoid; issue 34)
# ---------------------------------------------------------------------------------------------


def _avoid_only(problem: JoinOrderProblem, name: str, other: str, latency: bool = False) -> None:
    """The methods below search the cross-product-free plans only: exact under ``avoid`` alone; the DPs
    price no latency term (``latency``: refuse one)."""
    if not all(c.avoid_cross for c in problem.conjuncts):
        raise MethodLimitError(f"{name}: searches cross-product-free plans only, the optimum under "
                               f"--param cross_products=avoid; with cross products allowed use {other}")
    if latency and any(c.has_latency for c in problem.conjuncts):
        raise MethodLimitError(f"{name}: no latency term (alpha > 0); use bruteforce")


def _limited(name: str, problem: JoinOrderProblem, plans_of: Callable[[], list], limit: type[Exception], why: str,
             finish: Callable[[list], MethodResult], fallback: Callable[[Conjunct], Any]) -> MethodResult:
    """``finish(plans_of())``; past the deadline the plans ``fallback`` gives per conjunct (GREEDY over
    the query graph: no cross product) with no bound; a clear refusal past the method's size limit."""
    try:
        plans = plans_of()
    except DpTimeout:
        return MethodResult(plan=_assemble([fallback(c) for c in problem.conjuncts]), status="feasible",
                            message=f"{name}: time limit reached; GREEDY's order over the query graph (no bound)")
    except limit as exc:
        raise MethodLimitError(f"{name}: {why} ({exc.args[0]} reached)") from None
    return finish(plans)


@register(NAME, "dp-ccp-ld", "DP-LD over the connected subsets only (DPccp-style, Moerkotte & Neumann 2006): the "
          "exact order under cross_products=avoid; work ~ number of connected sets (n^2 on chains and cycles)",
          exact=True)
def _dp_ccp_ld(problem, *, time_limit=None, seed=0, max_sets: PositiveInt = 2_000_000):
    from cepopt.joinorder.dp_ccp_ld import SetLimit, dp_ccp_ld

    _avoid_only(problem, "dp-ccp-ld", "dp-ld or milp-order", latency=True)
    tree_ld = _tree_ld(problem)
    deadline = _deadline(time_limit)
    values: list[float] = []
    sets = 0

    def one(c: Conjunct) -> list[int]:
        nonlocal sets
        order, value, found = dp_ccp_ld(c, tree_ld=tree_ld, deadline=deadline, max_sets=max_sets)
        values.append(value)
        sets += found["connected_sets"]
        return order

    def finish(plans: list) -> MethodResult:
        stats = {"proof": f"dp-ccp-ld: DP over the {sets} connected sets", "connected_sets": sets}
        return _result(problem, plans, True, stats, values if problem.cost not in ("ldj",) else None)

    return _limited("dp-ccp-ld", problem, lambda: [order_plan(c, one(c)) for c in problem.conjuncts], SetLimit,
                    f"more than max_sets={max_sets} connected sets (a star has 2^(n-1), a clique 2^n): use ikkbz "
                    "on acyclic graphs, raise max_sets to try", finish,
                    lambda c: order_plan(c, greedy(c, adj=adjacency(c.b))))


@register(NAME, "ikkbz", "IKKBZ (Ibaraki & Kameda 1984, Krishnamurthy et al. 1986): the exact order of an acyclic "
          "query graph under cross_products=avoid in polynomial time (rank ordering, Theorem 5's ASI)", exact=True)
def _ikkbz(problem, *, time_limit=None, seed=0):
    from cepopt.joinorder.ikkbz import applies, ikkbz

    _avoid_only(problem, "ikkbz", "dp-ld or milp-order")
    tree_ld = _tree_ld(problem)
    for c in problem.conjuncts:
        why = applies(c, tree_ld)
        if why is not None:
            raise MethodLimitError(f"ikkbz: {why}; use dp-ccp-ld")
    deadline = _deadline(time_limit)
    values: list[float] = []
    complete: list[bool] = []

    def one(c: Conjunct) -> list[int]:
        order, value, done = ikkbz(c, tree_ld=tree_ld, deadline=deadline)
        values.append(value)
        complete.append(done)
        return order

    plans = [order_plan(c, one(c)) for c in problem.conjuncts]
    if not all(complete):
        return MethodResult(plan=_assemble(plans), status="feasible",
                            message="ikkbz: time limit reached before every root was tried")
    return _result(problem, plans, True, {"proof": "ikkbz: rank ordering on a tree query (ASI)"},
                   values if problem.cost not in ("ldj",) else None)


@register(NAME, "dp-ccp", "DPccp (Moerkotte & Neumann 2006): the exact bushy tree under cross_products=avoid by "
          "csg-cmp-pair enumeration; work ~ number of pairs ((n^3-n)/6 on a chain), stars solved as orders",
          exact=True)
def _dp_ccp(problem, *, time_limit=None, seed=0, max_pairs: PositiveInt = 5_000_000):
    from cepopt.joinorder.dp_ccp import PairLimit, dp_ccp, star_centre
    from cepopt.joinorder.ikkbz import applies, ikkbz

    _avoid_only(problem, "dp-ccp", "dp-b or milp-tree", latency=True)
    problem.tree_cost("tree")
    deadline = _deadline(time_limit)
    values: list[float] = []
    proofs: list[str] = []

    def one(c: Conjunct):
        if star_centre(adjacency(c.b)) is not None and applies(c, True) is None:
            # every cross-product-free tree of a star is left-deep: the best order under the tree cost
            order, value, done = ikkbz(c, tree_ld=True, deadline=deadline)
            if not done:
                raise DpTimeout
            values.append(value)
            proofs.append("dp-ccp: star graph, every cross-product-free tree is left-deep; ikkbz under the tree cost")
            return left_deep_indices(order)
        tree, value, found = dp_ccp(c, deadline=deadline, max_pairs=max_pairs)
        values.append(value)
        proofs.append(f"dp-ccp: DP over the {found['ccp_pairs']} csg-cmp pairs")
        return tree

    return _limited("dp-ccp", problem, lambda: [tree_plan(c, one(c)) for c in problem.conjuncts], PairLimit,
                    f"more than max_pairs={max_pairs} csg-cmp pairs (a clique has about 3^n/2): raise max_pairs "
                    "to try", lambda plans: _result(problem, plans, True, {"proof": "; ".join(proofs)},
                                                    values if problem.cost != "bj" else None),
                    lambda c: tree_plan(c, left_deep_indices(greedy(c, adj=adjacency(c.b)))))

