"""The Gloria family and its methods (registered under ``gloria``).

=============  ==============================================================================
gloria         GLORIA as published: node generation with the frequency test, progressive
               pruning (paper node pruning), path search (§5, §6). Exact only on forest-shaped
               pool graphs (stats ``pool_graph_is_forest``; ``eq22_end_sum``: Eq. 22 summed at the end
               pools, which counts shared pools once per end pool: no plan's cost).
gloria-safe    the same with the safe node pruning of specs/gloria.md §4.2 and no frequency test
noprune        the paper's NoPrune: the full graph (Figs 7a, 9b), then the path search
greedy         the paper's Greedy baseline (§8.1); option ``tie`` = share | nonshare
exhaustive     brute force over every set partition of each transition with every admissible
               snapshot type (Eq. 1); small workloads only
cpsat / milp   ``candidates=full``: the full-space model (formulations/gloria_full.py), Def. 2.7's
               optimum over every partition of every pool without enumerating options; otherwise
               the pairwise labelling model of spec §7.2 over ``candidates`` = noprune (default) |
               safe | gloria | exhaustive; both solve the LP relaxation first; milp takes
               ``backend`` = highs | scip | cbc
=============  ==============================================================================

Every plan is re-scored by :func:`cepopt.gloria.cost.evaluate`. CP-SAT and MILP report "optimal" only
with ``candidates=full`` or ``exhaustive``, the spaces whose optimum is the true optimum of Def. 2.7
under the cost model (spec §7.3 item 5): over any other candidate set their proven optimum is a plan of
the problem, "feasible", with no bound (stats ``candidates``, ``candidate_status``). Every method honours
``time_limit`` while it builds its candidate graph ("timeout" when it runs out).
"""

from __future__ import annotations

from typing import Literal

from cepopt.allocation import collector_paused
from cepopt.clock import now, remaining
from cepopt.errors import MethodLimitError
from cepopt.gloria import cost
from cepopt.gloria.compiled import compiled_modules
from cepopt.gloria.exhaustive import brute_force, exhaustive_graph
from cepopt.gloria.graph import BuildTimeout, CandidateGraph
from cepopt.gloria.greedy import greedy as greedy_options
from cepopt.gloria.nodes import generate
from cepopt.gloria.path_search import search
from cepopt.gloria.plan import plan_from_json, plan_to_json
from cepopt.gloria.problem import PROBLEM_OPTIONS, GloriaProblem, build
from cepopt.params import PositiveFloat, PositiveInt, Workers
from cepopt.registry import Family, declare, register
from cepopt.solution import MethodResult

__all__ = ["FAMILY", "candidate_graph"]

CANDIDATES = ("noprune", "safe", "gloria", "exhaustive")
#: the model without candidate nodes (cepopt.gloria.full), for cpsat and milp
FULL = "full"


def _baseline(problem: GloriaProblem):
    return cost.plan_from_options(problem, cost.baseline_options(problem))


FAMILY = declare(Family(
    name="gloria",
    description="Gloria shared trend aggregation: one annotated partition of the queries per transition",
    build=build,
    cost=cost,
    plan_to_json=plan_to_json,
    plan_from_json=plan_from_json,
    problem_options=PROBLEM_OPTIONS,
    default_methods=("gloria", "gloria-safe", "noprune", "greedy", "cpsat", "milp"),
    baseline_plan=_baseline,
))


def candidate_graph(problem: GloriaProblem, candidates: str, *, max_nodes: int = 20000,
                    max_options: int = 2000, deadline: float | None = None) -> CandidateGraph:
    """The candidate graph named ``candidates`` (noprune | safe | gloria | exhaustive);
    :class:`~cepopt.gloria.graph.BuildTimeout` past ``deadline`` (a ``now()`` value)."""
    if candidates not in CANDIDATES:
        from cepopt.errors import CepoptError

        raise CepoptError(f"params.candidates: must be one of {', '.join(CANDIDATES)}, got {candidates!r}")
    if candidates == "exhaustive":
        return exhaustive_graph(problem, max_options=max_options, deadline=deadline)
    return generate(problem, candidates, max_nodes=max_nodes, deadline=deadline)


def _deadline(start: float, time_limit: float | None) -> float | None:
    return None if time_limit is None else start + time_limit


def _remaining(deadline: float | None) -> float | None:
    """The time left for the search once the graph is built (a solver needs some time > 0)."""
    return remaining(deadline)


def _timeout(start: float, candidates: str, problem: GloriaProblem | None = None,
             step: str = "while building the {} candidate graph") -> MethodResult:
    """A method out of time: Greedy's plan (tie=share, the ``greedy`` method's; cheap, so a time-out never
    returns less than it) with status feasible and no bound, or, without ``problem``, no plan."""
    reason = "time limit reached " + step.format(candidates)
    stats = {"optimizer_time_s": now() - start}
    if problem is not None:
        try:
            options = greedy_options(problem, "share")
        except MethodLimitError:
            options = None
        if options is not None:
            return MethodResult(cost.plan_from_options(problem, options), status="feasible", stats=stats,
                                message=f"{reason}: Greedy's plan (no bound)")
    return MethodResult(None, status="timeout", stats=stats, message=reason)


def _searched(problem: GloriaProblem, mode: str, max_nodes: int, time_limit: float | None) -> MethodResult:
    start = now()
    with collector_paused():  # cepopt/allocation.py: the graph's many small containers hold no cycles
        try:
            graph = generate(problem, mode, max_nodes=max_nodes, deadline=_deadline(start, time_limit))
        except BuildTimeout:
            return _timeout(start, mode)
        options, stats = search(graph)
        plan = cost.plan_from_options(problem, options)
        stats = {**graph.stats, **stats}
        del graph  # freed while paused: the collector never scans it
    stats["optimizer_time_s"] = now() - start
    # which code was timed: the compiled modules (setup.py, cepopt/gloria/compiled.py), [] = pure Python
    stats["compiled_modules"] = list(compiled_modules())
    return MethodResult(plan, status="feasible", stats=stats,
                        message="GLORIA path search: exact only on forest-shaped pool graphs")


@register("gloria", "gloria", "GLORIA as published: generation, progressive pruning, path search (§5-§6)")
def gloria(problem: GloriaProblem, *, time_limit: float | None = None, seed: int = 0,
           max_nodes: PositiveInt = 20000) -> MethodResult:
    return _searched(problem, "gloria", max_nodes, time_limit)


@register("gloria", "gloria-safe", "GLORIA with the safe node pruning (spec §4.2), no frequency test")
def gloria_safe(problem: GloriaProblem, *, time_limit: float | None = None, seed: int = 0,
                max_nodes: PositiveInt = 20000) -> MethodResult:
    return _searched(problem, "safe", max_nodes, time_limit)


@register("gloria", "noprune", "NoPrune: the full GLORIA graph, then the path search (§8.1)")
def noprune(problem: GloriaProblem, *, time_limit: float | None = None, seed: int = 0,
            max_nodes: PositiveInt = 20000) -> MethodResult:
    return _searched(problem, "noprune", max_nodes, time_limit)


@register("gloria", "greedy", "Greedy: one node per pool, REUSE or not share (§8.1); tie=share|nonshare")
def greedy(problem: GloriaProblem, *, time_limit: float | None = None, seed: int = 0,
           tie: Literal["share", "nonshare"] = "share") -> MethodResult:
    start = now()
    options = greedy_options(problem, tie)
    return MethodResult(cost.plan_from_options(problem, options), status="feasible",
                        stats={"optimizer_time_s": now() - start, "tie": tie})


@register("gloria", "exhaustive", "brute force over every partition and snapshot type (small workloads)",
          exact=True)
def exhaustive(problem: GloriaProblem, *, time_limit: float | None = None, seed: int = 0,
               max_options: PositiveInt = 2000, max_plans: PositiveFloat = 5e6) -> MethodResult:
    start = now()
    deadline = _deadline(start, time_limit)
    try:
        graph = exhaustive_graph(problem, max_options=max_options, deadline=deadline, max_plans=max_plans)
    except BuildTimeout:
        return _timeout(start, "exhaustive", problem)
    choice, value, proven = brute_force(graph, max_plans=max_plans, time_limit=_remaining(deadline))
    stats = {**graph.stats, "optimizer_time_s": now() - start}
    if choice is None and not proven:
        return _timeout(start, "exhaustive", problem, "in the enumeration")
    if choice is None:
        return MethodResult(None, status="infeasible", stats=stats)
    return MethodResult(graph.plan(choice), status="optimal" if proven else "feasible",
                        solver_objective=value, stats=stats)


def _solved(problem: GloriaProblem, candidates: str, solver, max_nodes: int, max_options: int,
            time_limit: float | None, **kwargs) -> MethodResult:
    start = now()
    deadline = _deadline(start, time_limit)
    try:
        graph = candidate_graph(problem, candidates, max_nodes=max_nodes, max_options=max_options,
                                deadline=deadline)
    except BuildTimeout:
        return _timeout(start, candidates, problem)
    built = now() - start
    choice, status, objective, bound, stats = solver(graph, time_limit=_remaining(deadline), **kwargs)
    stats.update(candidates=candidates, candidate_status=status, nodes=graph.num_nodes, edges=graph.num_edges,
                 candidate_time_s=built, optimizer_time_s=now() - start)
    message = f"{status} over the {candidates} candidate nodes"
    if candidates != "exhaustive":
        # Only the exhaustive space holds the optimum of Def. 2.7 (spec §7.3 item 5): an optimum or bound
        # over fewer candidates is neither for the problem (gloria-e6: 132 over NOPRUNE, 128 in fact).
        bound = None
        if status == "optimal":
            status = "feasible"
            message = (f"optimal over the {candidates} candidate nodes only; candidates=full proves the "
                       "optimum of Def. 2.7 (every partition of every pool, without listing them)")
    if choice is None and status in ("timeout", "feasible"):
        return _timeout(start, candidates, problem, "in the solver (over the {} candidate nodes)")
    if choice is None:
        return MethodResult(None, status=status, bound=bound, stats=stats,
                            message=f"no plan found ({status})")
    return MethodResult(graph.plan(choice), status=status, bound=bound, solver_objective=objective,
                        stats=stats, message=message)


@register("gloria", "cpsat", "CP-SAT, LP first: with candidates=full the full-space model (every partition of "
          "every pool, Def. 2.7's optimum); else the pairwise labelling model over noprune|safe|gloria|exhaustive "
          "nodes (optimal over those only: status feasible, except exhaustive)", exact=True)
def cpsat(problem: GloriaProblem, *, time_limit: float | None = None, seed: int = 0,
          candidates: str = "noprune", workers: Workers = 2, lp_heavy: bool = True, max_nodes: PositiveInt = 20000,
          max_options: PositiveInt = 2000) -> MethodResult:
    if candidates == FULL:
        from cepopt.formulations.gloria_full import solve_full

        return solve_full(problem, backend="cpsat", time_limit=time_limit, seed=seed, workers=workers)
    from cepopt.formulations.gloria import solve_cpsat_gloria

    return _solved(problem, candidates, solve_cpsat_gloria, max_nodes, max_options, time_limit, seed=seed,
                   workers=workers, lp_heavy=lp_heavy)


@register("gloria", "milp", "MILP (backend=highs|scip|cbc), LP first; candidates=full|noprune|safe|gloria|"
          "exhaustive as for cpsat", exact=True)
def milp(problem: GloriaProblem, *, time_limit: float | None = None, seed: int = 0,
         candidates: str = "noprune", backend: str = "highs", max_nodes: PositiveInt = 20000,
         max_options: PositiveInt = 2000) -> MethodResult:
    if candidates == FULL:
        from cepopt.formulations.gloria_full import solve_full

        return solve_full(problem, backend=backend, time_limit=time_limit, seed=seed)
    from cepopt.formulations.gloria import solve_milp_gloria

    return _solved(problem, candidates, solve_milp_gloria, max_nodes, max_options, time_limit, seed=seed,
                   backend=backend)
