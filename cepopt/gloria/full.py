"""``cpsat`` / ``milp`` with ``candidates=full``: Def. 2.7's optimum over every partition of every pool.

The model (:mod:`cepopt.formulations.gloria_full`) is built and solved per component of the pool graph,
smallest first, each with the time left. A start plan (the cheaper of Greedy and the unshared plan,
both valid) is the hint and the fallback of a component without a solution in time. The result is
"optimal" only when every component's optimum is proven in exact arithmetic and the plan's exact cost
equals the sum of the proven bounds; otherwise "feasible" (or "timeout" when no component got further
than the start plan) with the best proven bound and the gap.
"""

from __future__ import annotations

import time
from fractions import Fraction

from cepopt.gloria import cost
from cepopt.gloria.graph import BuildTimeout
from cepopt.gloria.greedy import greedy as greedy_options
from cepopt.gloria.problem import GloriaProblem
from cepopt.solution import MethodResult
from cepopt.solve import MethodLimitError

__all__ = ["component_cost", "solve_full", "start_options"]


def start_options(problem: GloriaProblem) -> list:
    """The cheaper of Greedy's plan and the unshared plan (both valid)."""
    base = cost.baseline_options(problem)
    try:
        best = greedy_options(problem, "share")
    except MethodLimitError:
        return base
    return best if cost.total_cost(problem, best) <= cost.total_cost(problem, base) else base


def _sharable(problem: GloriaProblem, pools: list[int]) -> bool:
    return any(len(problem.pools[p].queries) >= 2 for p in pools)


def component_cost(problem: GloriaProblem, pools: list[int], options: list) -> object:
    """Exact cost of the pools of one component of the pool graph (their unary terms and out-terms)."""
    inside = set(pools)
    total = 0
    for p in pools:
        inner, end = cost.unary_cost(problem, problem.pools[p], options[p])
        total += inner + end
    for term in problem.terms:
        if term.a in inside:
            total += cost.pair_cost(problem, term, options[term.a], options[term.b])
    return total


def solve_full(problem: GloriaProblem, *, backend: str, time_limit: float | None, seed: int,
               workers: int = 2) -> MethodResult:
    from cepopt.formulations.gloria_full import build_full_model, components, full_hint, solve_component

    start = time.perf_counter()
    deadline = None if time_limit is None else start + time_limit
    options = start_options(problem)
    bound = Fraction(0)
    proven = True
    stats: dict = {"candidates": "full", "backend": backend, "components": 0, "variables": 0, "rows": 0,
                   "triangles": 0, "components_proven": 0, "components_timeout": 0}
    for comp in components(problem):
        if not _sharable(problem, comp):
            bound += Fraction(component_cost(problem, comp, options))
            continue
        stats["components"] += 1
        try:
            fm = build_full_model(problem, comp, deadline)
        except BuildTimeout:
            proven, bound = False, None
            stats["components_timeout"] += 1
            break
        left = None if deadline is None else max(deadline - time.perf_counter(), 1e-3)
        res = solve_component(fm, backend=backend, time_limit=left, seed=seed, workers=workers,
                              hint=full_hint(fm, options))
        for key in ("variables", "rows", "triangles"):
            stats[key] += fm.stats.get(key, 0)
        if res.options is not None:
            for p, option in res.options.items():
                options[p] = option
        if res.status == "optimal":
            stats["components_proven"] += 1
        else:
            proven = False
            stats["components_timeout"] += res.status in ("timeout", "feasible")
        if bound is not None:
            bound = None if res.bound is None else bound + Fraction(res.bound)
    value = cost.total_cost(problem, options)
    if bound is not None and Fraction(value) < bound:
        raise AssertionError(f"gloria full model: plan cost {value} below the proven bound {bound}")
    optimal = proven and bound is not None and Fraction(value) == bound
    stats["optimizer_time_s"] = time.perf_counter() - start
    status = "optimal" if optimal else "feasible"
    message = ("Def. 2.7 optimum proven (every partition of every pool)" if optimal else
               "best plan found; the bound is the proven lower bound of Def. 2.7's optimum")
    out_bound = None if bound is None else float(bound)
    return MethodResult(cost.plan_from_options(problem, options), status=status, bound=out_bound,
                        solver_objective=float(value), stats=stats, message=message)
