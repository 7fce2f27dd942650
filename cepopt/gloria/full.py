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
from cepopt.gloria.plan import sort_blocks
from cepopt.gloria.problem import GloriaProblem
from cepopt.solution import MethodResult
from cepopt.solve import MethodLimitError

__all__ = ["component_cost", "solve_full", "start_options"]


def start_options(problem: GloriaProblem, deadline: float | None = None, seed: int = 0,
                  noprune: bool = True) -> tuple[list, str]:
    """The cheapest of the unshared plan, Greedy's plan and (``noprune``) the optimum over the NOPRUNE
    candidate nodes (CP-SAT on the pairwise labelling model, a quarter of the time left at most):
    (options, which)."""
    found = [(cost.total_cost(problem, cost.baseline_options(problem)), "unshared", cost.baseline_options(problem))]
    try:
        options = greedy_options(problem, "share")
        found.append((cost.total_cost(problem, options), "greedy", options))
    except MethodLimitError:
        pass
    left = None if deadline is None else (deadline - time.perf_counter()) / 4
    if noprune and (left is None or left > 0.05):
        try:
            from cepopt.formulations.gloria import solve_cpsat_gloria
            from cepopt.gloria.nodes import generate

            graph = generate(problem, "noprune", deadline=None if left is None else time.perf_counter() + left)
            choice, _status, _obj, _bound, _stats = solve_cpsat_gloria(
                graph, time_limit=None if left is None else max(left, 0.05), seed=seed)
            if choice is not None:
                options = [graph.options[p][j] for p, j in enumerate(choice)]
                found.append((cost.total_cost(problem, options), "noprune", options))
        except (BuildTimeout, MethodLimitError):
            pass
    value, which, options = min(found, key=lambda t: t[0])
    return list(options), which


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
    from cepopt.formulations.gloria_full import components, prepare, repair

    start = time.perf_counter()
    deadline = None if time_limit is None else start + time_limit
    prep = prepare(problem)
    # CP-SAT takes the start plan as its hint (the NOPRUNE optimum is often the optimum); the MILP only
    # falls back on it
    first, which = start_options(problem, deadline, seed, noprune=backend == "cpsat")
    options = repair(problem, prep, first)
    parts = components(problem, prep)
    # the cost outside every part: the unshared plan's cost minus the parts' model values of that plan
    bound: Fraction | None = Fraction(cost.total_cost(problem, cost.baseline_options(problem)))
    stats: dict = {"candidates": "full", "backend": backend, "start_plan": which, "parts": len(parts),
                   "variables": 0, "rows": 0, "triangles": 0, "parts_proven": 0}
    for part in parts:
        got = _solve_part(problem, prep, part, options, backend, deadline, seed, workers, stats)
        bound = None if bound is None or got is None else bound + got
    value = cost.total_cost(problem, options)
    if bound is not None and Fraction(value) < bound:
        raise AssertionError(f"gloria full model: plan cost {value} below the proven bound {bound}")
    optimal = stats["parts_proven"] == len(parts) and bound is not None and Fraction(value) == bound
    stats["optimizer_time_s"] = time.perf_counter() - start
    message = ("Def. 2.7 optimum proven (every partition of every pool)" if optimal else
               "best plan found; the bound is a proven lower bound of Def. 2.7's optimum")
    return MethodResult(cost.plan_from_options(problem, options), status="optimal" if optimal else "feasible",
                        bound=None if bound is None else float(bound), solver_objective=float(value), stats=stats,
                        message=message)


def _solve_part(problem, prep, part, options: list, backend, deadline, seed, workers, stats) -> Fraction | None:
    """Solve one part, write its blocks into ``options``; its bound minus its model value of the unshared
    plan (None when unknown)."""
    from cepopt.formulations.gloria_full import build_full_model, full_hint, model_value, solve_component

    try:
        fm = build_full_model(problem, part, deadline, prep)
    except BuildTimeout:
        stats["message"] = "time limit reached while building a part's model"
        return None
    base = model_value(fm, full_hint(fm, cost.baseline_options(problem)))
    res = solve_component(fm, backend=backend, deadline=deadline, seed=seed, workers=workers,
                          hint=full_hint(fm, options))
    for key in ("variables", "rows", "triangles"):
        stats[key] += fm.stats.get(key, 0)
    for p, blocks in (res.options or {}).items():
        kept = [b for b in options[p] if not part[p].intersection(b.queries)]
        options[p] = sort_blocks(kept + blocks)
    stats["parts_proven"] += res.status == "optimal"
    return None if res.bound is None else Fraction(res.bound) - Fraction(base)
