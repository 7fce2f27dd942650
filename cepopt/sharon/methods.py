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
* ``cpsat-compact`` / ``milp-compact`` - the compact x[p,q]/y[p] model over groups of identical queries
  (also honours subsets=all; :func:`~cepopt.formulations.sharon.compact_model`).

Time limits (issue 21): the limit covers the problem's build (solve() passes on what is left), the
expanded graph, the models and the solves. Every exact method starts from the floor (:func:`_floor`:
GWMIN on the original graph, a plan for every option set, and the gain bounds while time is left; issue
30): the graph methods compute it before the expanded graph, whose build, cells and cliques then stop at
the deadline (:class:`~cepopt.clock.TimeLimitReached`: the floor is the answer); a capped expansion keeps
the gain bound. The compact methods stop building their model at the deadline less :data:`FLOOR_SHARE`
of the time, take the segment DP's plan and bound from it (expanded problem; the floor, in the share
kept for it, when no model was built in time), count writing the solver's proto,
and keep back a reserve for the solver's own overshoot (:data:`SOLVER_RESERVE_PER_VARIABLE`), so past the
limit they only re-score their plan. HiGHS can overshoot at its root node (its analytic centre has no
time limit: at 20,000 default queries, seed 1, a 57 s limit ended after 96 s), so large HiGHS models run
in a child process killed just after the limit (:mod:`cepopt.formulations.mathopt_child`). In the graph
methods a step that is running when the limit passes (GWMIN of the floor, the MWIS model's build, a
solver's own check interval) is not interrupted: ``pytest -m bench tests/sharon/test_time_limits.py`` measures the
wall time of 2 s calls. Loading the instance file (JSON schema, query parsing: 1.2 s of CPU at 10,000 queries)
happens before the clock starts.
Every exact method keeps the best plan it has seen - GWMIN's, the LP tree's
incumbent, the solver's, the plan finder's - and, when the time runs out, returns it with status
``feasible``, the best proven bound (the solver's, the tree's, or the graph's clique-cover bound) and a
message that says so. Proofs hold for the weights' own arithmetic: with integer weights a proof made in
floating point or on rounded weights counts only where it carries over (one unit of the weights' gcd,
:func:`~cepopt.formulations.model.certify`); else a small graph is settled by exact enumeration, or the
status stays ``feasible``. Plans are returned without zero-benefit entries and are checked against the
candidate definition (spec §2.1: BValue > 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Literal

from cepopt.clock import Deadline, now
from cepopt.errors import CepoptError, MethodLimitError
from cepopt.formulations.model import certify
from cepopt.formulations.sharon import (
    COMPACT_HIGHS_OPTIONS,
    MWIS_CPSAT_NO_CUTS,
    MWIS_SCIP_NO_CUTS,
    compact_model,
    decode_compact,
    decode_mwis,
    mwis_model,
    solve_sharon_model,
)
from cepopt.params import NonNegativeInt, PositiveInt, Workers
from cepopt.registry import Family, declare, register
from cepopt.sharon import cost
from cepopt.sharon.dominance import undominated
from cepopt.sharon.exhaustive import MAX_EXHAUSTIVE_VERTICES, enumerate_sets
from cepopt.sharon.exhaustive import exhaustive as _exhaustive
from cepopt.sharon.gwmin import guaranteed_weight, gwmin
from cepopt.sharon.plan import SharonPlan
from cepopt.sharon.plan_finder import find_plan
from cepopt.sharon.problem import PROBLEM_OPTIONS, SharonProblem, build
from cepopt.sharon.reduction import reduce_graph
from cepopt.solution import MethodResult

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

#: graphs of at most this many vertices are settled by exact enumeration when a floating-point or
#: rounded proof cannot carry over to exact integer weights (at most VERIFY_SETS independent sets)
VERIFY_VERTICES = 400
VERIFY_SETS = 1_000_000

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


# ------------------------------------------------------------------------------------------ shared parts
def _clock(time_limit: float | None) -> Deadline:
    """The method's time limit as a deadline on :func:`cepopt.clock.now`, from the call on."""
    from cepopt.formulations.native import check_time_limit

    check_time_limit(time_limit)  # inf, nan, 1e308, <= 0: a user error before any work
    return Deadline.after(time_limit)


@dataclass
class _Best:
    """The best plan a method has seen, its exact score, where it came from, and the best proven bound."""

    plan: SharonPlan
    value: object = 0
    source: str = "empty plan"
    bound: object = None
    universal: object = None  # the best bound valid for every option set (a capped graph's bounds are not)
    gwmin: dict = field(default_factory=dict)  # id(graph) -> GWMIN's vertices on it (an LP start)

    def offer(self, plan: SharonPlan | None, value, source: str) -> None:
        if plan is not None and value > self.value:
            self.plan, self.value, self.source = plan, value, source

    def tighten(self, bound) -> None:
        """Keep the lowest bound; one below a plan already seen is no bound (a solver's default value,
        not a proof) and is ignored."""
        if bound is None or float(self.value - bound) > 1e-6 * max(1.0, abs(float(self.value))):
            return
        if self.bound is None or bound < self.bound:
            self.bound = bound

    def tighten_universal(self, bound) -> None:
        """A bound over every option set (the gain bounds): a bound of the method's graph too."""
        self.tighten(bound)
        if bound is not None and self.bound is not None and bound >= self.bound and (
                self.universal is None or bound < self.universal):
            self.universal = bound


def _stats(problem: SharonProblem, **more) -> dict:
    return {**problem.summary(), **more}


def _clean(problem: SharonProblem, plan: SharonPlan) -> tuple[SharonPlan, int, object]:
    """``plan`` without its entries of BValue <= 0 (spec §2.1: a candidate has BValue > 0; the compact
    models may switch on a pattern whose queries' gains only pay its fixed charge, and a solution found
    before the time limit may even hold a losing one), checked valid. Returns (plan, entries removed,
    their BValue sum)."""
    problem.check(plan)
    kept, removed = [], 0
    for pattern, queries in plan.shared:
        value = problem.bvalue(pattern, queries)
        if value > 0:
            kept.append((pattern, queries))
        else:
            removed += value
    dropped = len(plan.shared) - len(kept)
    return (SharonPlan.of(kept) if dropped else plan), dropped, removed


def _unit(weights) -> object:
    """The gcd of exact integer weights (0 for floats): a better plan beats a plan by at least this."""
    from cepopt.formulations.model import Model, unit_of

    m = Model()
    m.add_vars([""] * len(weights), obj=list(weights))
    return unit_of(m)


def _float_exact(weights) -> bool:
    """Do floating-point sums decide for these weights as exact arithmetic would? Not for exact integers
    whose sums pass 2^52 (floats take them as measured values, proven to tolerance)."""
    return not (weights and all(isinstance(w, int) for w in weights) and sum(abs(w) for w in weights) >= 2**52)


def _exact_settle(problem: SharonProblem, best: _Best, clock: Deadline, graph=None) -> bool:
    """Settle the optimum by exact enumeration on a small graph (the full option set, never a capped
    one); True when it did (``best`` then holds the optimum and its bound)."""
    if problem.expansion_stats.get("options_cut"):
        return False
    if graph is None and problem._graph is None and len(problem.original) > VERIFY_VERTICES:
        return False  # the expanded graph is at least as large: not worth building
    try:
        g = graph if graph is not None else problem.graph
    except MethodLimitError:
        return False
    if len(g) > VERIFY_VERTICES:
        return False
    found = enumerate_sets(g, max_sets=VERIFY_SETS, deadline=clock.at)
    if not found.complete:
        return False
    best.offer(problem.plan_of(found.chosen, g), found.weight, "exact enumeration")
    best.bound = best.value
    return True


def _finish(problem: SharonProblem, best: _Best, *, proven: bool, unit, stats: dict, message: str = "",
            clock: Deadline | None = None, graph=None, stopped: bool = False) -> MethodResult:
    """The method's answer: ``best``'s plan (cleaned), "optimal" when ``proven`` or when the bound proves
    it for the exact weights (else, on a small graph, after exact enumeration), else "feasible" with the
    bound and a message naming the plan's source."""
    if not proven and best.bound is not None:
        proven = certify(best.value, best.bound, unit, "max")
    if not proven and clock is not None and not clock.over() and _exact_settle(problem, best, clock, graph):
        proven = True
        stats["verified_by"] = "exact enumeration"
        message = "proven by exact enumeration (the solver's floating-point or rounded proof does not carry over " \
                  "to these integer weights)"
    plan, dropped, removed = _clean(problem, best.plan)
    if dropped:
        stats["non_beneficial_entries_removed"] = dropped
    stats["plan_source"] = best.source
    stats["objective_tolerance"] = 1e-9
    value = best.value - removed  # the model's value of the plan, less the entries dropped
    if proven:
        return MethodResult(plan, "optimal", bound=value, solver_objective=value, stats=stats, message=message)
    if clock is not None and (clock.over() or stopped):  # stopped: the solver's limit (the time less a reserve)
        note = f"time limit reached: best plan seen ({best.source})"
        message = "; ".join(m for m in (note, message) if m)
    return MethodResult(plan, "feasible", bound=best.bound, solver_objective=value, stats=stats, message=message)


def _on_graph(problem: SharonProblem, result: MethodResult, best: _Best | None = None) -> MethodResult:
    """A graph method's proof covers the graph it searched. When the option cap truncated the expansion
    (``options_cut``), that graph misses options of the expanded problem, so the plan is only feasible
    for it and its bounds are no bounds (measured: 60 default queries, subsets=all: 5434 against the
    compact models' 5774): the bound is then the best one over every option set that ``best`` holds
    (the gain bounds of :func:`_floor`), or none."""
    cut = problem.expansion_stats.get("options_cut", 0)
    universal = None if best is None else best.universal
    if not cut or (result.status != "optimal" and result.bound is None and universal is None):
        return result
    note = (f"the option cap (max_options={problem.max_options}) cut the options of {cut} candidates: "
            "optimal over the capped graph only (raise max_options, or use cpsat-compact / milp-compact)")
    if universal is not None and result.solver_objective is not None and universal < result.solver_objective:
        universal = None  # pragma: no cover - a gain bound below a plan's value would be a bug
    return replace(result, status="feasible", bound=universal,
                   message="; ".join(m for m in (result.message, note) if m))


#: share of the time left that the compact methods keep for :func:`_floor` when their model's build does
#: not finish: the build stops at the rest, so the fallback is computed within the limit, not after it
FLOOR_SHARE = 0.25


def _floor(problem: SharonProblem, best: _Best, clock: Deadline) -> list[int] | None:
    """What an exact method returns at least: GWMIN's plan on the original graph (a plan for every option
    set: the paper's greedy optimizer GO, and ``greedy`` itself with expand=false) and a bound: the
    original graph's clique-cover bound with expand=false, else the gain bounds over every option set
    (:meth:`~cepopt.sharon.problem.SharonProblem.query_bound`, then the tighter per-position
    :meth:`~cepopt.sharon.problem.SharonProblem.cell_bound` when time is left). GWMIN always finishes:
    a limit shorter than it is overrun by it (the documented margin of every Sharon exact method; the
    methods compute the floor before their search, or, the compact ones, in the share of the limit kept
    for it). Returns GWMIN's vertices (None when the graph is too dense for it)."""
    g = problem.original
    if problem.expand:
        best.tighten_universal(problem.query_bound())
    picked = _gwmin_best(problem, g, best, None, "GWMIN" if not problem.expand else "GWMIN on the original graph")
    if not problem.expand:
        try:
            best.tighten(g.cover_bound())
        except MethodLimitError:
            pass
    else:
        best.tighten_universal(problem.cell_bound(deadline=clock.at))
    return picked


def _graph_or_floor(problem: SharonProblem, best: _Best, clock: Deadline, adjacency: bool = False
                    ) -> tuple[object, str]:
    """(the method's graph, "") after :func:`_floor` and, on the expanded graph, GWMIN's plan on it (what
    ``greedy`` returns), both before the search and within the limit; (None, the reason) when the graph
    is over its limits (or, with ``adjacency``, too dense for adjacency lists)."""
    _floor(problem, best, clock)
    try:
        graph = problem.graph_by(clock.at)
        if adjacency:
            graph.adj  # noqa: B018 -- built here so that a graph too dense for it is refused here
    except MethodLimitError as exc:
        return None, str(exc)
    if problem.expand:
        _gwmin_best(problem, graph, best, clock)
    return graph, ""


def _gwmin_best(problem: SharonProblem, graph, best: _Best, clock: Deadline | None = None,
                source: str = "GWMIN") -> list[int] | None:
    """Offer GWMIN's plan on ``graph`` to ``best`` (stopped at ``clock``'s deadline: the vertices picked
    by then); its vertices (None when the graph is too dense)."""
    try:
        chosen = gwmin(graph, deadline=None if clock is None else clock.at)
    except MethodLimitError:
        return None
    if clock is not None and clock.over():
        source += ", stopped at the time limit"
    best.offer(problem.plan_of(chosen, graph), graph.weight_of(chosen), source)
    best.gwmin[id(graph)] = chosen
    return chosen


def _fallback(problem: SharonProblem, graph, best: _Best, clock: Deadline, stats: dict) -> None:
    """When a search stops early, with time left: the clique-cover bound, then the root LP of the clique
    model, whose rounding often beats GWMIN (computed before the search) and whose value bounds the
    optimum."""
    if clock.over():
        return
    try:
        best.tighten(graph.cover_bound())
    except MethodLimitError:
        return
    if clock.over():
        return
    start = [0] * len(graph)
    for i in best.gwmin.get(id(graph), ()):
        start[i] = 1
    tree = _lp_tree(graph, 1, clock, 2, start)
    if tree is not None:
        picked = decode_mwis(tree.x)
        best.offer(problem.plan_of(picked, graph), graph.weight_of(picked), "LP rounding")
        best.tighten(tree.bound)
        stats["root_lp_bound"] = tree.root_bound


# ------------------------------------------------------------------------------------------ heuristics
@register("sharon", "greedy", "GWMIN greedy MWIS (Alg. 8); reports its guaranteed weight (Eq. 10)")
def greedy(problem: SharonProblem, *, time_limit=None, seed=0) -> MethodResult:
    g = problem.graph
    chosen = gwmin(g)
    plan = _clean(problem, problem.plan_of(chosen))[0]
    return MethodResult(plan, "feasible", stats=_stats(
        problem, guaranteed_weight=float(guaranteed_weight(g)), greedy_weight=float(g.weight_of(chosen))))


# ------------------------------------------------------------------------------------------ the paper's
@register("sharon", "sharon", "the paper's optimizer: sound reduction (Alg. 2) + level-wise plan finder "
          "(Alg. 3-4)", exact=True)
def sharon(problem: SharonProblem, *, time_limit=None, seed=0,
           reduction: Literal["paper", "recompute", "literal"] = "paper",
           per_component: bool = False, max_level: PositiveInt = 1_000_000) -> MethodResult:
    clock = _clock(time_limit)
    floor = _Best(SharonPlan.empty())
    g, reason = _graph_or_floor(problem, floor, clock, adjacency=True)
    if g is None:
        return _without_graph(problem, floor, clock, reason)
    remaining, free, pruned, rstats = reduce_graph(g, mode=reduction, per_component=per_component,
                                                   deadline=clock.at)
    if per_component:
        chosen, fstats = [], {"levels": [], "plans": 0, "complete": "stopped" not in rstats}
        for comp in g.components(remaining):
            part, st = find_plan(g, comp, time_limit=clock.left(floor=1e-3), max_level=max_level)
            chosen += part
            fstats["plans"] += st["plans"]
            fstats["complete"] &= st["complete"]
            fstats["levels"].append(st["levels"])
            if "stopped" in st:
                fstats["stopped"] = st["stopped"]
    else:
        chosen, fstats = find_plan(g, remaining, time_limit=clock.left(floor=0.0), max_level=max_level)
        fstats["complete"] &= "stopped" not in rstats
    chosen = list(chosen) + list(free)
    stats = _stats(problem, reduction=reduction, pruned=len(pruned), conflict_free=len(free),
                   reduced_vertices=len(remaining), guaranteed_weight=rstats["bound"],
                   levels=fstats["levels"], plans_enumerated=fstats["plans"])
    # a completed search returns its own plan (the literal reduction's is the paper's, not GWMIN's);
    # a stopped one the best of it and the floor
    best = _Best(SharonPlan.empty(), universal=floor.universal) if fstats["complete"] else floor
    best.offer(problem.plan_of(chosen), g.weight_of(chosen), "plan finder")
    if fstats["complete"] and reduction == "literal":
        return MethodResult(_clean(problem, best.plan)[0], "feasible", stats=stats,
                            message="the literal Alg. 2 reduction is unsound (spec §4): no proof of optimality")
    if fstats["complete"]:
        return _on_graph(problem, _finish(problem, best, proven=True, unit=0, stats=stats), best)
    _fallback(problem, g, best, clock, stats)
    if best.source != "plan finder":
        stats["fallback"] = best.source
    stopped = fstats.get("stopped") or rstats.get("stopped")
    return _on_graph(problem, _finish(problem, best, proven=False, unit=_unit(g.weights), stats=stats,
                                      message=f"plan finder stopped ({stopped}); best plan so far or GWMIN"), best)


@register("sharon", "exhaustive", "EO: score every subset of the (expanded) graph; small graphs only",
          exact=True)
def exhaustive(problem: SharonProblem, *, time_limit=None, seed=0,
               max_subset_vertices: PositiveInt = MAX_EXHAUSTIVE_VERTICES) -> MethodResult:
    """``max_subset_vertices``: beyond it (2^n plans) the method does not search; it returns GWMIN's plan
    as ``feasible`` with the clique-cover bound. Not ``max_vertices``, which is the problem option capping
    the expanded graph."""
    clock = _clock(time_limit)
    best = _Best(SharonPlan.empty())
    g, reason = _graph_or_floor(problem, best, clock)
    if g is None:
        return _without_graph(problem, best, clock, reason)
    if len(g) > max_subset_vertices:
        stats = _stats(problem, plans=0)
        _fallback(problem, g, best, clock, stats)
        msg = (f"exhaustive search over 2^{len(g)} plans refused (max_subset_vertices={max_subset_vertices}): "
               "the best of GWMIN and the rounded root LP, with the best bound")
        return _on_graph(problem, _finish(problem, best, proven=False, unit=_unit(g.weights), stats=stats,
                                          message=msg), best)
    chosen = _exhaustive(g, max_vertices=max_subset_vertices)
    best = _Best(SharonPlan.empty(), universal=best.universal)  # the optimum of the graph: nothing beats it there
    best.offer(problem.plan_of(chosen), g.weight_of(chosen), "exhaustive search")
    return _on_graph(problem, _finish(problem, best, proven=True, unit=0, stats=_stats(problem, plans=2 ** len(g))),
                     best)


@register("sharon", "bruteforce", "enumerate every independent set (test oracle)", exact=True)
def bruteforce(problem: SharonProblem, *, time_limit=None, seed=0, max_sets: PositiveInt = 2_000_000) -> MethodResult:
    """Stops after ``max_sets`` independent sets or at the time limit, then returns the better of the
    best set seen and GWMIN's plan as ``feasible``, with the clique-cover bound."""
    clock = _clock(time_limit)
    floor = _Best(SharonPlan.empty())
    g, reason = _graph_or_floor(problem, floor, clock, adjacency=True)
    if g is None:
        return _without_graph(problem, floor, clock, reason)
    found = enumerate_sets(g, max_sets=max_sets, deadline=clock.at)
    stats = _stats(problem, independent_sets=found.visited)
    if found.complete:  # the optimum of the graph: no floor plan beats it there
        best = _Best(SharonPlan.empty(), universal=floor.universal)
        best.offer(problem.plan_of(found.chosen), found.weight, "enumeration")
        return _on_graph(problem, _finish(problem, best, proven=True, unit=0, stats=stats), best)
    floor.offer(problem.plan_of(found.chosen), found.weight, "enumeration")
    _fallback(problem, g, floor, clock, stats)
    return _on_graph(problem, _finish(problem, floor, proven=False, unit=_unit(g.weights), stats=stats,
                                      message=f"enumeration stopped ({found.stopped})", clock=clock), floor)


# ------------------------------------------------------------------------------------------ MWIS models
def _lp_tree(sub, lp_nodes: int, clock: Deadline, workers: int, incumbent):
    """The LP branch-and-bound on the MWIS graph ``sub`` (None when off, when the graph is too dense for
    maximal cliques, or when its root LP failed). It gets at most half the time left and starts from
    ``incumbent`` (a 0-1 vector). Its incumbent comes from rounding its LPs (the root's rounding alone
    beats GWMIN on the stress instances)."""
    from cepopt.formulations.clique_bnb import clique_branch_and_bound
    from cepopt.formulations.sharon import extended_cliques

    if not lp_nodes or not len(sub):
        return None
    try:
        cliques = extended_cliques(sub, sub.cliques())
    except MethodLimitError:
        return None  # too dense for maximal cliques; over cell cliques the tree rarely closes
    deadline = None if clock.at is None else now() + clock.left(0.5)
    return clique_branch_and_bound(sub.weights, cliques, incumbent=incumbent, node_limit=lp_nodes,
                                   deadline=deadline, threads=min(workers, 2), root_multiple=LP_TREE_ROOT_MULTIPLE,
                                   float_exact=_float_exact(sub.weights))


def _mwis_graph(problem: SharonProblem, reduce, clock: Deadline) -> tuple[list[int], object, dict]:
    """The vertices the MWIS model gets (after the optional dominance reduction) and its graph."""
    g = problem.graph_by(clock.at)
    keep = undominated(g) if reduce else list(range(len(g)))
    sub = g if len(keep) == len(g) else g.induced(keep)
    return keep, sub, {"dominated_removed": len(g) - len(keep)}


def _without_graph(problem: SharonProblem, best: _Best, clock: Deadline, reason: str) -> MethodResult:
    """A graph method whose graph is over its limits: the floor it computed first (:func:`_floor`: GWMIN's
    plan on the original graph, valid for every option set, and the gain bounds), status feasible, with
    the reason."""
    return _finish(problem, best, proven=False, unit=_EXACT_ONLY, stats=_stats(problem),
                   message=f"{reason}: GWMIN's plan on the original graph and the gain bound")


def _mwis_start(problem: SharonProblem, keep: list[int], best: _Best, clock: Deadline) -> list[int]:
    """GWMIN's plan on the method's graph (so a time-out never returns less than ``greedy``; with
    expand=false :func:`_floor` computed it) as the first incumbent, and as a 0-1 start over ``keep``
    (vertices the dominance reduction removed are left out: the vector stays feasible)."""
    graph = problem.graph
    chosen = best.gwmin[id(graph)] if id(graph) in best.gwmin else _gwmin_best(problem, graph, best, clock)
    picked = set(chosen or ())
    return [1 if v in picked else 0 for v in keep]


def _mwis_model(sub, extend: bool, stats: dict):
    """The MWIS model; over cell cliques when the graph is too dense for the maximal ones (their adjacency
    lists are over :data:`~cepopt.sharon.graph.MAX_ADJACENCY_PAIRS`: the method used to end in an error)."""
    if extend:
        try:
            return mwis_model(sub, extend=True)
        except MethodLimitError:
            stats["extend"] = "off: the graph is too dense for maximal cliques"
    return mwis_model(sub, extend=False)


def _mwis(problem: SharonProblem, backend: str, *, time_limit, seed, reduce: bool, split: bool, extend: bool,
          lp_nodes: int, workers: int, solver_options: dict, **solve_options) -> MethodResult:
    """cpsat and milp: reduced graph, GWMIN start, LP tree, then the solver with the best start as hint,
    each within the time left; the best plan seen and the best bound at the end."""
    from cepopt.formulations.export import export_now
    from cepopt.formulations.native import check_seed, settings

    clock = _clock(time_limit)
    check_seed(seed, *((-(2**31), 2**31 - 1) if backend == "cpsat" else (0, 2**31 - 1)), solver=backend)
    best = _Best(SharonPlan.empty())
    _floor(problem, best, clock)  # first: the expanded graph's build is not interrupted and may be over its limits
    try:
        keep, sub, extra = _mwis_graph(problem, reduce, clock)
    except MethodLimitError as exc:  # the expanded graph is too large to build: still a plan and a bound
        return _without_graph(problem, best, clock, str(exc))
    model = None
    if settings().export is not None:  # --export: the model, even when the LP tree proves the answer first
        model = _mwis_model(sub, extend, extra)
        export_now(model, backend)
    start = _mwis_start(problem, keep, best, clock)
    if not clock.over():
        best.tighten(sub.cover_bound())
    unit = _unit(sub.weights)
    tree = None if clock.over() else _lp_tree(sub, lp_nodes, clock, workers, start)
    if tree is not None:
        extra["lp_tree"] = {"lps": tree.nodes, "closed": tree.closed, "root_bound": tree.root_bound,
                            "objective": tree.objective}
        chosen = decode_mwis(tree.x)
        best.offer(problem.plan_of(chosen, sub), sub.weight_of(chosen), "LP tree")
        best.tighten(tree.bound)
        if tree.proven or certify(best.value, best.bound, unit, "max"):
            return _on_graph(problem, _finish(problem, best, proven=True, unit=unit,
                                              stats=_stats(problem, variables=len(keep), **extra)), best)
        start = tree.x if sub.weight_of(chosen) >= sub.weight_of(decode_mwis(start)) else start
    stats = _stats(problem, variables=len(keep), **extra)
    message = ""
    if not clock.over():
        model = model or _mwis_model(sub, extend, stats)
        model.hint = start
        res = solve_sharon_model(model, backend, seed=seed, split=split, workers=workers, deadline=clock.at,
                                 options=solver_options, **solve_options)
        stats.update(res.stats)
        if res.x is not None:
            chosen = decode_mwis(res.x)
            best.offer(problem.plan_of(chosen, sub), sub.weight_of(chosen), backend)
        best.tighten(res.bound)
        if res.status in ("error", "infeasible"):
            message = f"{backend}: {res.status} ({res.message}); best plan seen before"
        elif res.status == "optimal" and best.source == backend:
            return _on_graph(problem, _finish(problem, best, proven=True, unit=unit, stats=stats), best)
        elif res.message:
            message = res.message
    return _on_graph(problem, _finish(problem, best, proven=False, unit=unit, stats=stats, message=message,
                                      clock=clock, graph=sub), best)


@register("sharon", "cpsat", "MWIS: LP branch-and-bound on maximal cliques (lp_nodes), then CP-SAT with "
          "cell-clique constraints and the tree's (or GWMIN's) plan as hint, generic cuts off", exact=True)
def cpsat(problem: SharonProblem, *, time_limit=None, seed=0, workers: Workers = 2, lp_heavy: bool = True,
          presolve: bool = False, reduce: bool = True, split: bool = True, extend: bool = CPSAT_EXTEND_CLIQUES,
          cuts: bool = False, lp_nodes: NonNegativeInt = LP_NODES) -> MethodResult:
    """CP-SAT parameters: ``workers`` (2), ``seed``, LP-heavy search (linearization_level=2 + max_lp),
    CP-SAT presolve off (it costs more than it saves here), the best plan so far (LP tree or GWMIN) as
    hint, CG/MIR/zero-half cuts off unless ``cuts`` (:data:`~cepopt.formulations.sharon.MWIS_CPSAT_NO_CUTS`).
    ``reduce``: drop dominated vertices first (exact, :mod:`cepopt.sharon.dominance`); ``split``: solve
    independent blocks one by one (:mod:`cepopt.formulations.blocks`); ``extend``: grow the cell cliques
    to maximal cliques (:func:`cepopt.formulations.sharon.mwis_model`); ``lp_nodes``: LPs of the
    branch-and-bound run first (0: none; :data:`LP_NODES`)."""
    return _mwis(problem, "cpsat", time_limit=time_limit, seed=seed, reduce=reduce, split=split, extend=extend,
                 lp_nodes=lp_nodes, workers=workers, solver_options={} if cuts else dict(MWIS_CPSAT_NO_CUTS),
                 lp_heavy=lp_heavy, presolve=presolve)


@register("sharon", "milp", "MWIS: LP branch-and-bound on maximal cliques (lp_nodes), then a MILP with "
          "maximal-clique constraints (backend scip|highs|cbc or a PuLP solver; SCIP without cut rounds)",
          exact=True)
def milp(problem: SharonProblem, *, time_limit=None, seed=0, backend: str = "scip",
         reduce: bool = True, split: bool = True, extend: bool = MILP_EXTEND_CLIQUES, cuts: bool = False,
         lp_nodes: NonNegativeInt = LP_NODES, workers: Workers = 2) -> MethodResult:
    """``backend`` scip (default) | highs | cbc | a PuLP solver by name (gurobi, cplex, ...);
    ``reduce``, ``split``, ``extend`` as for ``cpsat`` (``extend`` defaults to true here:
    :data:`MILP_EXTEND_CLIQUES`). With SCIP, no cutting-plane rounds unless ``cuts``
    (:data:`~cepopt.formulations.sharon.MWIS_SCIP_NO_CUTS`); the others keep their defaults.

    SCIP is the default on this model: measured CPU seconds at 500 queries (stress seeds 0-2, default
    seeds 0-2), both with their default cuts, SCIP 23.7 / 8.5 / 1.0 / 0.3 / 0.2 / 3.6, HiGHS 29.2 /
    10.8 / 1.6 / 0.3 / 0.3 / 8.3 (HiGHS without presolve 26.7 / 19.6 / 0.4 / 0.2 / 0.2 / 5.3).
    ``lp_nodes``: LPs of the branch-and-bound run first, as for ``cpsat`` (``workers``: its threads)."""
    _check_backend(backend)
    no_cuts = not cuts and backend == "scip"
    return _mwis(problem, backend, time_limit=time_limit, seed=seed, reduce=reduce, split=split, extend=extend,
                 lp_nodes=lp_nodes, workers=workers, solver_options=dict(MWIS_SCIP_NO_CUTS) if no_cuts else {})


def _check_backend(backend: str) -> None:
    """A MILP backend name, checked before any work (an unknown or missing one is a CepoptError)."""
    from cepopt.formulations.milp import _backend_kind, _pulp_solver

    if backend == "cpsat":
        raise CepoptError("backend cpsat: use the cpsat / cpsat-compact methods")
    if _backend_kind(backend) == "pulp" and backend != "cbc":
        _pulp_solver(backend, msg=False, time_limit=None, rel_gap=0.0, threads=1, seed=0)


# ------------------------------------------------------------------------------------------ compact models
def _compact_hint(model, picked) -> list[int]:
    """GWMIN's vertices as a 0-1 start of the compact model."""
    x = [0] * len(model.names)
    chosen = set(picked or ())
    for k, (_, var_of, y) in enumerate(model.decode[1]):
        if k in chosen:
            x[y] = 1
            for i in var_of.values():
                x[i] = model.ub[i]  # every copy of the group shares the vertex's pattern
    return x


def _segment_start(problem: SharonProblem, model, best: _Best) -> list[int]:
    """The segment DP's bound and plan of the expanded problem's compact model
    (:mod:`cepopt.formulations.sharon_segments`): the first bound and incumbent; returns the plan's vector."""
    from cepopt.formulations.sharon_segments import segments_of

    segments = segments_of(model)
    best.tighten(segments.bound())
    x = segments.plan(len(model.names))
    best.offer(SharonPlan.of(decode_compact(model, x)), model.value(x), "segment DP")
    return x


#: seconds of the time left kept back from the solver per model variable (at most SOLVER_RESERVE_SHARE of
#: it), for CP-SAT's own overshoot of its limit (loading the model, the first LP): measured 3.1 s past a
#: 10 s limit on 380k variables (10,000 stress queries, load 7 on 2 cores)
SOLVER_RESERVE_PER_VARIABLE = 1.5e-5
SOLVER_RESERVE_SHARE = 0.2

#: the granularity a proof needs when no model was built: the bound must equal the plan's value
_EXACT_ONLY = Fraction(1, 10**30)


def _compact(problem: SharonProblem, backend: str, *, time_limit, seed, hint: bool, split: bool,
             **solve_options) -> MethodResult:
    """cpsat-compact and milp-compact: the compact model, solved within the time left. The model's build
    stops at the deadline. On the expanded problem the segment DP reads a plan and a bound off the model
    (:mod:`cepopt.formulations.sharon_segments`: 0.1 s at 10,000 stress queries, where GWMIN on the
    original graph took 5 s and the per-position gain bound 2.8 s), so a time-out has them; GWMIN and
    the gain bound remain the fallback when the model was not built in time. With expand=false, GWMIN
    and the clique-cover bound of the original graph come first. The solver gets what is left less a
    reserve for its own overshoot."""
    from cepopt.formulations.export import export_now
    from cepopt.formulations.native import check_seed, settings
    from cepopt.formulations.sharon import BuildTimeout

    clock = _clock(time_limit)
    check_seed(seed, *((-(2**31), 2**31 - 1) if backend == "cpsat" else (0, 2**31 - 1)), solver=backend)
    best = _Best(SharonPlan.empty())
    picked = None
    if not problem.expand:
        picked = _floor(problem, best, clock)
    stats = _stats(problem)
    message, unit, stopped = "", _EXACT_ONLY, True
    # the build stops FLOOR_SHARE of the time left before the deadline: the floor gets that share
    build_deadline = None if clock.at is None else clock.at - FLOOR_SHARE * clock.left()
    try:  # --export writes the whole model, whatever the limit
        model = compact_model(problem, deadline=None if settings().export is not None else build_deadline)
    except BuildTimeout:
        model = None
        message = "time limit reached while building the compact model"
    if model is None and problem.expand:  # no model to read a plan from: GWMIN and the gain bounds
        _floor(problem, best, clock)
    if model is not None:
        export_now(model, backend)
        unit = _unit(model.objective)
        if problem.expand:
            start = _segment_start(problem, model, best)
            model.hint = start if hint else None
        else:
            model.hint = _compact_hint(model, picked) if hint else None
    if model is not None and not clock.over():
        deadline = clock.at
        if deadline is not None:
            deadline -= min(SOLVER_RESERVE_PER_VARIABLE * len(model.names), SOLVER_RESERVE_SHARE * clock.left())
        res = solve_sharon_model(model, backend, seed=seed, split=split, deadline=deadline, **solve_options)
        stats.update(res.stats)
        if res.x is not None:
            best.offer(SharonPlan.of(decode_compact(model, res.x)), res.objective, backend)
        best.tighten(res.bound)
        stopped = res.status in ("feasible", "timeout")
        if res.status in ("error", "infeasible"):
            message = f"{backend}: {res.status} ({res.message}); best plan seen before"
        elif res.status == "optimal" and best.source == backend:
            return _finish(problem, best, proven=True, unit=unit, stats=stats)
        elif res.message:
            message = res.message
    graph = problem.original if not problem.expand else None
    return _finish(problem, best, proven=False, unit=unit, stats=stats, message=message, clock=clock, graph=graph,
                   stopped=stopped)


@register("sharon", "cpsat-compact", "compact x[p,q]/y[p] model in CP-SAT (LP-heavy: linearization 2 + "
          "max_lp); expanded optimum without enumerating options", exact=True)
def cpsat_compact(problem: SharonProblem, *, time_limit=None, seed=0, workers: Workers = 2,
                  lp_heavy: bool = True, hint: bool = False, presolve: bool = False, split: bool = True
                  ) -> MethodResult:
    """CP-SAT parameters: ``workers`` (2), ``seed``, LP-heavy search (linearization_level=2 plus the
    max_lp subsolver; without it the fixed-charge model stalls at a 1-25 % gap), CP-SAT presolve off
    (measured: it takes more time than the search and halves the speed). The start plan (the segment
    DP's, or GWMIN's with expand=false) is kept as the fallback; as a hint it is optional (``hint=true``):
    measured with GWMIN's, it slowed the proof down on this model. ``split`` as for ``cpsat``."""
    return _compact(problem, "cpsat", time_limit=time_limit, seed=seed, hint=hint, split=split, workers=workers,
                    lp_heavy=lp_heavy, presolve=presolve)


@register("sharon", "milp-compact", "compact x[p,q]/y[p] model as a MILP (backend highs|scip|cbc or a PuLP "
          "solver)", exact=True)
def milp_compact(problem: SharonProblem, *, time_limit=None, seed=0, backend: str = "highs",
                 split: bool = True) -> MethodResult:
    """``backend`` highs (presolve off when expanded: :data:`cepopt.formulations.sharon.COMPACT_HIGHS_OPTIONS`)
    | scip | cbc | a PuLP solver by name; ``split`` as for ``cpsat``."""
    _check_backend(backend)
    # expand=false leaves no free x: the model is the MWIS, on which HiGHS's presolve pays
    options = COMPACT_HIGHS_OPTIONS if backend == "highs" and problem.expand else None
    return _compact(problem, backend, time_limit=time_limit, seed=seed, hint=False, split=split, options=options)
