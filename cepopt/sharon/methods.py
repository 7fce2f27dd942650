"""The Sharon family (shared online event sequence aggregation; Poppe et al., ICDE 2018).

Objective: maximise Score(plan) = sum of BValue of the shared candidates (Eq. 9), the estimated
benefit of sharing over the Non-Shared plan. Every method works on ``problem.graph``: the expanded
graph (§7.1, default) or the original Sharon graph (``--param expand=false``); the compact models
encode the same option set without enumerating it (see :mod:`cepopt.formulations.sharon`).

Methods:

* ``greedy`` - GWMIN (App. B, Alg. 8); the paper's greedy optimizer GO when run with expand=false.
* ``sharon`` - the paper's optimizer SO: sound graph reduction (Alg. 2, spec §4) + level-wise plan
  finder (Alg. 3-4); falls back to the better of its best plan and GWMIN when it runs out of time.
* ``exhaustive`` - EO: scores every subset of the vertices (2^|V|); refuses beyond 22 vertices.
* ``bruteforce`` - enumerates every independent set (the test oracle).
* ``cpsat`` / ``milp`` - MWIS with clique constraints (cell cliques for CP-SAT, maximal cliques for
  the MILP: ``extend``) after an exact neighbourhood-dominance reduction (``reduce=false`` turns it
  off). Both first run an LP branch-and-bound over maximal cliques for at most ``lp_nodes`` LPs
  (:mod:`cepopt.formulations.clique_bnb`; ``lp_nodes=0`` turns it off): when it closes its tree, that
  is the proof (stats ``lp_tree``); otherwise its best plan is CP-SAT's hint. CP-SAT is otherwise
  hinted with GWMIN; milp uses SCIP by default; the solvers' generic cuts are off (``cuts=true``
  turns them on).
* ``cpsat-compact`` / ``milp-compact`` - the compact x[p,q]/y[p] model (also honours subsets=all).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Literal

from cepopt.formulations.sharon import (
    COMPACT_HIGHS_OPTIONS,
    MWIS_CPSAT_NO_CUTS,
    MWIS_SCIP_NO_CUTS,
    compact_model,
    decode_compact,
    mwis_model,
    solve_cpsat_model,
    solve_milp_model,
)
from cepopt.params import NonNegativeInt, PositiveInt, Workers
from cepopt.sharon import cost
from cepopt.sharon.dominance import undominated
from cepopt.sharon.exhaustive import MAX_EXHAUSTIVE_VERTICES
from cepopt.sharon.exhaustive import bruteforce as _bruteforce
from cepopt.sharon.exhaustive import exhaustive as _exhaustive
from cepopt.sharon.gwmin import guaranteed_weight, gwmin
from cepopt.sharon.plan import SharonPlan
from cepopt.sharon.plan_finder import find_plan
from cepopt.sharon.problem import PROBLEM_OPTIONS, SharonProblem, build
from cepopt.sharon.reduction import reduce_graph
from cepopt.solution import MethodResult
from cepopt.solve import Family, declare, register

__all__ = ["FAMILY"]

#: defaults of the ``extend`` option (maximal instead of cell cliques) of cpsat and milp: the tighter LP
#: pays for SCIP once its own cuts are off (:data:`~cepopt.formulations.sharon.MWIS_SCIP_NO_CUTS`;
#: measured wall s, cell -> maximal cliques: stress 500 queries 13.0 / 3.5 / 1.2 -> 4.3 / 2.2 / 1.5,
#: stress 200 seed 0 1.8 -> 1.0, 1000 queries default 11.3 -> 9.7, stress 6.8 -> 5.5; default 500 within
#: 0.1 s), not for CP-SAT (stress 500 seed 0 2.7-4.1 -> 5.4, seed 1 1.3 -> 1.5, stress 200 1.5 -> 1.9)
CPSAT_EXTEND_CLIQUES = False
MILP_EXTEND_CLIQUES = True

#: LPs the branch-and-bound of cpsat and milp may solve before the solver takes over, and its time as a
#: multiple of its root LP's. Measured on the original graphs of 200-1000 queries (3 seeds, both
#: presets): 17 of 18 close after 1-15 LPs in at most 7.3x the root LP's time; default 1000 seed 0
#: needs 71 LPs (30x), where CP-SAT alone is faster.
LP_NODES = 64
LP_TREE_ROOT_MULTIPLE = 10.0

FAMILY = declare(Family(
    name="sharon",
    description="Sharon: which queries share which sub-pattern (MWIS of the Sharon graph)",
    build=build,
    cost=cost,
    plan_to_json=lambda plan: plan.to_json(),
    plan_from_json=lambda problem, value: SharonPlan.from_json(value),
    problem_options=PROBLEM_OPTIONS,
    default_methods=("greedy", "sharon", "cpsat", "milp", "cpsat-compact", "milp-compact"),
    baseline_plan=lambda problem: SharonPlan.empty(),
))


def _stats(problem: SharonProblem, **more) -> dict:
    return {**problem.summary(), **more}


def _on_graph(problem: SharonProblem, result: MethodResult) -> MethodResult:
    """A graph method's proof covers the graph it searched. When the option cap truncated the expansion
    (``options_cut``), that graph misses options of the expanded problem, so the plan is only feasible
    for it and no bound is proven (measured: 60 default queries, subsets=all: 5434 against the compact
    models' 5774)."""
    cut = problem.expansion_stats.get("options_cut", 0)
    if result.status != "optimal" or not cut:
        return result
    note = (f"the option cap (max_options={problem.max_options}) cut the options of {cut} candidates: "
            "optimal over the capped graph only (raise max_options, or use cpsat-compact / milp-compact)")
    return replace(result, status="feasible", bound=None,
                   message="; ".join(m for m in (result.message, note) if m))


@register("sharon", "greedy", "GWMIN greedy MWIS (Alg. 8); reports its guaranteed weight (Eq. 10)")
def greedy(problem: SharonProblem, *, time_limit=None, seed=0) -> MethodResult:
    g = problem.graph
    chosen = gwmin(g)
    return MethodResult(problem.plan_of(chosen), "feasible", stats=_stats(
        problem, guaranteed_weight=float(guaranteed_weight(g)), greedy_weight=float(g.weight_of(chosen))))


@register("sharon", "sharon", "the paper's optimizer: sound reduction (Alg. 2) + level-wise plan finder "
          "(Alg. 3-4)", exact=True)
def sharon(problem: SharonProblem, *, time_limit=None, seed=0,
           reduction: Literal["paper", "recompute", "literal"] = "paper",
           per_component: bool = False, max_level: PositiveInt = 1_000_000) -> MethodResult:
    g = problem.graph
    start = time.perf_counter()
    remaining, free, pruned, rstats = reduce_graph(g, mode=reduction, per_component=per_component)
    left = None if time_limit is None else max(time_limit - (time.perf_counter() - start), 0.0)
    if per_component:
        best, fstats = [], {"levels": [], "plans": 0, "complete": True}
        for comp in g.components(remaining):
            if time_limit is not None:
                left = max(time_limit - (time.perf_counter() - start), 1e-3)
            part, st = find_plan(g, comp, time_limit=left, max_level=max_level)
            best += part
            fstats["plans"] += st["plans"]
            fstats["complete"] &= st["complete"]
            fstats["levels"].append(st["levels"])
            if "stopped" in st:
                fstats["stopped"] = st["stopped"]
    else:
        best, fstats = find_plan(g, remaining, time_limit=left, max_level=max_level)
    chosen = list(best) + list(free)
    stats = _stats(problem, reduction=reduction, pruned=len(pruned), conflict_free=len(free),
                   reduced_vertices=len(remaining), guaranteed_weight=rstats["bound"],
                   levels=fstats["levels"], plans_enumerated=fstats["plans"])
    if fstats["complete"] and reduction == "literal":
        return MethodResult(problem.plan_of(chosen), "feasible", stats=stats,
                            message="the literal Alg. 2 reduction is unsound (spec §4): no proof of optimality")
    if fstats["complete"]:
        return _on_graph(problem, MethodResult(problem.plan_of(chosen), "optimal", stats=stats))
    greedy_pick = gwmin(g)
    if g.weight_of(greedy_pick) > g.weight_of(chosen):
        chosen = greedy_pick
        stats["fallback"] = "gwmin"
    return MethodResult(problem.plan_of(chosen), "feasible", stats=stats,
                        message=f"plan finder stopped ({fstats.get('stopped')}); best plan so far or GWMIN")


@register("sharon", "exhaustive", "EO: score every subset of the (expanded) graph; small graphs only",
          exact=True)
def exhaustive(problem: SharonProblem, *, time_limit=None, seed=0,
               max_subset_vertices: PositiveInt = MAX_EXHAUSTIVE_VERTICES) -> MethodResult:
    """``max_subset_vertices``: refuse graphs with more vertices (2^n plans); not ``max_vertices``,
    which is the problem option capping the expanded graph."""
    chosen = _exhaustive(problem.graph, max_vertices=max_subset_vertices)
    return _on_graph(problem, MethodResult(problem.plan_of(chosen), "optimal",
                                           stats=_stats(problem, plans=2 ** len(problem.graph))))


@register("sharon", "bruteforce", "enumerate every independent set (test oracle)", exact=True)
def bruteforce(problem: SharonProblem, *, time_limit=None, seed=0, max_sets: PositiveInt = 2_000_000) -> MethodResult:
    chosen = _bruteforce(problem.graph, max_sets=max_sets)
    return _on_graph(problem, MethodResult(problem.plan_of(chosen), "optimal", stats=_stats(problem)))


def _result(problem, x, status, obj, bound, stats, plan_fn) -> MethodResult:
    if x is None:
        return MethodResult(None, status if status != "optimal" else "error", bound=bound, stats=stats,
                            message=f"solver status {status}")
    return MethodResult(plan_fn(x), status, bound=bound, solver_objective=obj, stats=stats)


def _mwis_hint(problem: SharonProblem, keep: list[int]) -> list[int]:
    """GWMIN on the original graph, mapped to the full-candidate options (always in the expanded
    graph, and independent there too): cheap even when the expanded graph is large. Hinted vertices
    removed by the dominance reduction are left out (the hint stays feasible)."""
    where = problem.index_of(problem.graph)
    picked = {where[problem.original.vertices[i].key] for i in gwmin(problem.original)}
    return [1 if i in picked else 0 for i in keep]


def _lp_tree(sub, lp_nodes: int, time_limit, workers: int):
    """The LP branch-and-bound on the MWIS graph ``sub`` (None when off, when the graph is too dense for
    maximal cliques, or when its root LP failed). It gets at most half the time limit. Its
    incumbent comes from rounding its LPs (the root's rounding alone beats GWMIN on the stress
    instances), so GWMIN runs only for a solver without a tree."""
    from cepopt.formulations.clique_bnb import clique_branch_and_bound
    from cepopt.formulations.sharon import extended_cliques
    from cepopt.solve import MethodLimitError

    if not lp_nodes or not len(sub):
        return None
    try:
        cliques = extended_cliques(sub, sub.cliques())
    except MethodLimitError:
        return None  # too dense for maximal cliques; over cell cliques the tree rarely closes
    deadline = None if time_limit is None else time.perf_counter() + time_limit / 2
    return clique_branch_and_bound(sub.weights, cliques, node_limit=lp_nodes, deadline=deadline,
                                   threads=min(workers, 2), root_multiple=LP_TREE_ROOT_MULTIPLE)


def _mwis_result(problem: SharonProblem, keep: list[int], tree, x, status, obj, bound, stats: dict
                 ) -> MethodResult:
    """The MWIS methods' result over the vertices ``keep``. An unclosed LP tree's incumbent replaces a
    solver's worse one (a time-out), with the tighter of the two bounds."""
    if tree is not None and status in ("timeout", "feasible") and (x is None or obj < tree.objective - 1e-9):
        x, obj, status = tree.x, tree.objective, "feasible"
        bound = tree.bound if bound is None else min(bound, tree.bound)
    return _on_graph(problem, _result(problem, x, status, obj, bound, stats,
                                      lambda x: problem.plan_of(keep[i] for i, xi in enumerate(x) if xi)))


def _mwis_tree_first(problem: SharonProblem, reduce: bool, lp_nodes: int, time_limit, workers: int):
    """The common start of cpsat and milp: the reduced graph, then the LP tree. Returns (keep, sub,
    stats so far, tree, the result when the tree closed else None, the solver's time left)."""
    start = time.perf_counter()
    keep, sub, extra = _mwis_graph(problem, reduce)
    tree = _lp_tree(sub, lp_nodes, time_limit, workers)
    proof = None
    if tree is not None:
        extra["lp_tree"] = {"lps": tree.nodes, "closed": tree.closed, "root_bound": tree.root_bound,
                            "objective": tree.objective}
        if tree.closed:
            proof = _mwis_result(problem, keep, tree, tree.x, "optimal", tree.objective, tree.objective,
                                 _stats(problem, variables=len(keep), **extra))
    left = None if time_limit is None else max(time_limit - (time.perf_counter() - start), 0.01)
    return keep, sub, extra, tree, proof, left


def _mwis_graph(problem: SharonProblem, reduce) -> tuple[list[int], object, dict]:
    """The vertices the MWIS model gets (after the optional dominance reduction) and its graph."""
    g = problem.graph
    keep = undominated(g) if reduce else list(range(len(g)))
    sub = g if len(keep) == len(g) else g.induced(keep)
    return keep, sub, {"dominated_removed": len(g) - len(keep)}


@register("sharon", "cpsat", "MWIS: LP branch-and-bound on maximal cliques (lp_nodes), then CP-SAT with "
          "cell-clique constraints and the tree's (or GWMIN's) plan as hint, generic cuts off", exact=True)
def cpsat(problem: SharonProblem, *, time_limit=None, seed=0, workers: Workers = 2, lp_heavy: bool = True,
          presolve: bool = False, reduce: bool = True, split: bool = True, extend: bool = CPSAT_EXTEND_CLIQUES,
          cuts: bool = False, lp_nodes: NonNegativeInt = LP_NODES) -> MethodResult:
    """CP-SAT parameters: ``workers`` (2), ``seed``, LP-heavy search (linearization_level=2 + max_lp),
    CP-SAT presolve off (it costs more than it saves here), the LP tree's (or GWMIN's) plan as hint, CG/MIR/zero-half
    cuts off unless ``cuts`` (:data:`~cepopt.formulations.sharon.MWIS_CPSAT_NO_CUTS`). ``reduce``: drop
    dominated vertices first (exact, :mod:`cepopt.sharon.dominance`); ``split``: solve independent
    blocks one by one (:mod:`cepopt.formulations.blocks`); ``extend``: grow the cell cliques to
    maximal cliques (:func:`cepopt.formulations.sharon.mwis_model`); ``lp_nodes``: LPs of the
    branch-and-bound run first (0: none; :data:`LP_NODES`)."""
    keep, sub, extra, tree, proof, left = _mwis_tree_first(problem, reduce, lp_nodes, time_limit, workers)
    if proof is not None:
        return proof
    hint = tree.x if tree is not None else _mwis_hint(problem, keep)
    model = mwis_model(sub, extend=extend)
    x, status, obj, bound, st = solve_cpsat_model(model, time_limit=left, seed=seed,
                                                  hint=hint, workers=workers,
                                                  lp_heavy=lp_heavy, presolve=presolve, split=split,
                                                  extra=None if cuts else MWIS_CPSAT_NO_CUTS)
    return _mwis_result(problem, keep, tree, x, status, obj, bound, _stats(problem, **st, **extra))


@register("sharon", "milp", "MWIS: LP branch-and-bound on maximal cliques (lp_nodes), then a MILP with "
          "maximal-clique constraints (backend scip|highs|cbc; SCIP without cut rounds)", exact=True)
def milp(problem: SharonProblem, *, time_limit=None, seed=0, backend: str = "scip",
         reduce: bool = True, split: bool = True, extend: bool = MILP_EXTEND_CLIQUES, cuts: bool = False,
         lp_nodes: NonNegativeInt = LP_NODES, workers: Workers = 2) -> MethodResult:
    """``backend`` scip (default) | highs | cbc; ``reduce``, ``split``, ``extend`` as for ``cpsat``
    (``extend`` defaults to true here: :data:`MILP_EXTEND_CLIQUES`). With SCIP, no cutting-plane
    rounds unless ``cuts`` (:data:`~cepopt.formulations.sharon.MWIS_SCIP_NO_CUTS`); HiGHS and CBC
    keep their defaults.

    SCIP is the default on this model: measured CPU seconds at 500 queries (stress seeds 0-2, default
    seeds 0-2), both with their default cuts, SCIP 23.7 / 8.5 / 1.0 / 0.3 / 0.2 / 3.6, HiGHS 29.2 /
    10.8 / 1.6 / 0.3 / 0.3 / 8.3 (HiGHS without presolve 26.7 / 19.6 / 0.4 / 0.2 / 0.2 / 5.3).
    ``lp_nodes``: LPs of the branch-and-bound run first, as for ``cpsat`` (``workers``: its threads)."""
    keep, sub, extra, tree, proof, left = _mwis_tree_first(problem, reduce, lp_nodes, time_limit, workers)
    if proof is not None:
        return proof
    model = mwis_model(sub, extend=extend)
    no_cuts = not cuts and backend == "scip"
    x, status, obj, bound, st = solve_milp_model(model, backend=backend, time_limit=left, seed=seed,
                                                 split=split,
                                                 options=MWIS_SCIP_NO_CUTS if no_cuts else None)
    return _mwis_result(problem, keep, tree, x, status, obj, bound, _stats(problem, **st, **extra))


def _compact_hint(problem: SharonProblem, model) -> list[int]:
    picked = set(gwmin(problem.original))
    x = [0] * len(model.names)
    for k, (_, var_of, y) in enumerate(model.decode[1]):
        if k in picked:
            x[y] = 1
            for i in var_of.values():
                x[i] = 1
    return x


@register("sharon", "cpsat-compact", "compact x[p,q]/y[p] model in CP-SAT (LP-heavy: linearization 2 + "
          "max_lp); expanded optimum without enumerating options", exact=True)
def cpsat_compact(problem: SharonProblem, *, time_limit=None, seed=0, workers: Workers = 2,
                  lp_heavy: bool = True, hint: bool = False, presolve: bool = False, split: bool = True
                  ) -> MethodResult:
    """CP-SAT parameters: ``workers`` (2), ``seed``, LP-heavy search (linearization_level=2 plus the
    max_lp subsolver; without it the fixed-charge model stalls at a 1-25 % gap), CP-SAT presolve off
    (measured: it takes more time than the search and halves the speed). A GWMIN hint is optional
    (``hint=true``): measured, it slows the proof down on this model. ``split`` as for ``cpsat``."""
    model = compact_model(problem)
    start = _compact_hint(problem, model) if hint else None
    x, status, obj, bound, st = solve_cpsat_model(model, time_limit=time_limit, seed=seed, hint=start,
                                                  workers=workers, lp_heavy=lp_heavy, presolve=presolve,
                                                  split=split)
    return _result(problem, x, status, obj, bound, _stats(problem, **st),
                   lambda x: SharonPlan.of(decode_compact(model, x)))


@register("sharon", "milp-compact", "compact x[p,q]/y[p] model as a MILP (backend highs|scip|cbc)",
          exact=True)
def milp_compact(problem: SharonProblem, *, time_limit=None, seed=0, backend: str = "highs",
                 split: bool = True) -> MethodResult:
    """``backend`` highs (presolve off when expanded: :data:`cepopt.formulations.sharon.COMPACT_HIGHS_OPTIONS`)
    | scip | cbc; ``split`` as for ``cpsat``."""
    model = compact_model(problem)
    x, status, obj, bound, st = solve_milp_model(model, backend=backend, time_limit=time_limit, seed=seed,
                                                 split=split,
                                                 # expand=false leaves no free x: the model is the MWIS,
                                                 # on which HiGHS's presolve pays
                                                 options=COMPACT_HIGHS_OPTIONS if backend == "highs"
                                                 and problem.expand else None)
    return _result(problem, x, status, obj, bound, _stats(problem, **st),
                   lambda x: SharonPlan.of(decode_compact(model, x)))
