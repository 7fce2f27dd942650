"""MILP and CP-SAT models of join-order plan selection (spec §7; an extension [X], not in the paper).

Notation (spec §7.0): ``a_i = ln(W r_i sel_ii)``, ``b_ij = ln sel_ij < 0`` on the predicate pairs E.
Each model is written as **build / solve / decode** in the model container
(:mod:`cepopt.formulations.model`), solved by HiGHS (default; feasibility tolerance 1e-9, relative gap
0), SCIP or CBC.

- **M-ORD** (:func:`solve_order_milp`, spec §7.1): ``x[i,k]`` = event i is among the first k (nested
  prefixes ⇔ a permutation), ``y[e,k] <= x[i,k], x[j,k]`` (= x_i x_j at the optimum since b < 0),
  ``L_k = Σ a_i x[i,k] + Σ b_e y[e,k] = ln PM(S_k)`` exactly, a continuous variable of its own (so a
  tangent cut is a row of two entries, not n + |E|: measured 4-10x faster solves at n = 40);
  ``exp(L_k)`` is replaced by ``u_k`` under tangent cuts (outer approximation, spec §7.2 A) in
  :func:`outer_approximation`, the loop both tangent-cut models share. Latency (§6.1): ``d_i >= x[t,k] -
  x[i,k]`` adds ``α W r_i d_i`` exactly. Start plans: GREEDY, II-GREEDY and the window DP
  (:mod:`cepopt.joinorder.window`, exact reordering of 16 consecutive positions at a time), which is
  often the optimum itself; the best is handed to the solver as a MIP start in every round. Before the
  MILP, ``sparse_dp=True`` (default) runs the sparse bounded DP-LD (:mod:`cepopt.joinorder.dp_ld_sparse`)
  under the best start's cost, over prefix sets and, when that cut does not bite, suffix sets: it proves
  every preset at n = 40 in well under a second (issue 22). Such a proof is the DP's, never the MILP's:
  ``stats["proof"]`` names it, ``iterations`` is 0; when the DP stops, its lower bound is kept.
- **M-BUSHY, compact** (``milp-tree`` with ``model=compact``, spec §7.4): n-1 internal-node slots in
  topological order; ``l[i,j]`` leaf i is a child of node j, ``m[j',j]`` node j' is a child of node j,
  ``s[i,j]`` leaf i is below node j; ``L_j`` as above; the same loop. Weak beyond n = 7.
- **M-BUSHY, subset flow** (:func:`solve_tree_flow`, ``milp-tree`` default): a 0/1 ``y[S,A]`` per
  candidate node S and split S = A ⊎ (S \\ A) (A ∋ min S); the root takes one split, every other node
  as many as the splits that produce it; the objective Σ PM(S) y[S,·] has *exact constants* (PM(S) is a
  function of the set), so no tangent cuts at all. Its LP is the linear program of DP-B (the DP values
  are an optimal dual), so the LP bound is the optimum. Candidate nodes are the subsets that survive
  DP-B's exact upper-bound cut (:mod:`cepopt.joinorder.dp_fast`): n = 12 in seconds.
- **CP-SAT bottleneck** (:func:`solve_order_cpsat`, spec §7.3): integer logs ``A_i = round(s·a_i)``,
  ``B_e = round(s·b_e)`` (s = ``scale``, default 1000, lowered to a power of ten when the sums would
  leave 64-bit integers, e.g. Kleene logs of 1e200), minimise ``M >= L_k`` (k < n), then, with M
  fixed at its optimum, minimise ``Σ_k L_k``. An (n-1)-approximation of Cost_ord, not exact; no latency.

The outer-approximation loop (:func:`outer_approximation`): the objective is scaled by ``e^{-σ}``, σ
the log of the best plan known (mandatory: raw costs span 1e3..1e100+), and ``L <= σ`` is a valid cut
(one term of the optimum never exceeds the incumbent's total). The first cuts sit at the start plan's
own slot values (its surrogate is exact from the first solve; with tight tolerances that is what made
an independent implementation 1.5-8x faster, issue 22) and on a grid below σ; the incumbent, with each
u at its largest cut, is the solver's MIP start (``OASpec.encode``). Each round solves the MILP to a
proven optimum, evaluates the decoded plan exactly (a better one is improved further by
``OASpec.improve``, the window DP for orders) and adds cuts at its slot values and at the solution's
own (``OASpec.solution_logs``: M-BUSHY's equal-size nodes may sit in either slot). It stops:

* **optimal** when no cut is new and the MILP is optimal: the solution's surrogate is exact, so
  its cost is the MILP's optimum, a lower bound of the true one (to the solver's precision);
* **optimal** also when ``ln UB - ln LB <= 1e-9``: the gap is closed to the solver's precision (also
  when a time or iteration limit stops the loop there); the bound reported is then the proven LB;
* **feasible** when ``UB - LB <= tol·UB`` for a user's ``tol`` > 0 (default 0: iterate until proven; the
  proven bound LB is reported, with the tolerance used), or at the time / iteration limit (the best plan
  with its bound).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cepopt.clock import check, now, remaining
from cepopt.errors import MethodLimitError
from cepopt.formulations.model import Model, solve
from cepopt.joinorder.cost import (
    leaf_log,
    log_node,
    log_order_variable,
    log_trpt_lat_tree,
    logsumexp,
    order_logs,
)
from cepopt.joinorder.greedy import greedy
from cepopt.joinorder.problem import Conjunct
from cepopt.joinorder.window import window_dp
from cepopt.joinorder.zstream import zstream

__all__ = ["ModelOutcome", "OASpec", "outer_approximation", "solve_order_cpsat", "solve_order_milp",
           "solve_tree_flow", "solve_tree_milp"]

_EDGE = -1e-12  # b below this is a predicate


@dataclass
class ModelOutcome:
    """A model's answer for one conjunct: index plan, status, stats, and ln(UB/LB) of the cost."""

    plan: Any
    status: str
    stats: dict = field(default_factory=dict)
    message: str = ""
    log_ratio: float = 0.0
    #: ln of the cost the MILP itself assigns at the end (surrogate + constants), for solve()'s cross-check
    solver_log: float | None = None


def _edges(conj: Conjunct) -> list[tuple[int, int]]:
    return [(i, j) for i in range(conj.n) for j in range(i + 1, conj.n) if conj.b[i, j] < _EDGE]


#: Tangent cuts flatter than e^-20 (a term below 2e-9 of the incumbent's cost) are left out: they
#: cannot move the bound by more than the stopping tolerance, and HiGHS drops (or chokes on) such
#: coefficients.
_MIN_LOG_SLOPE = -20.0 - 1e-9
#: the default ``tol`` (0: iterate until the optimum is proven or a limit is reached)
_EXACT_TOL = 0.0
#: a gap (ln UB - ln LB, LB the solver's own dual bound before the widening of BOUND_TOLERANCE) this small
#: is closed to the solver's precision: its absolute gap 1e-9 on an objective scaled to 1 (relative gap
#: 0), plus 1e-9 of rounding: "optimal"
_PROOF_GAP = 2e-9


def _remaining(deadline: float | None) -> float | None:
    """Seconds left (at least a millisecond: a solver given no time at all still answers at once)."""
    return remaining(deadline)


def _solve(m: Model, backend: str, time_limit: float | None, seed: int, stats: dict, hint: list | None = None):
    """The container's solve with HiGHS's tight feasibility tolerance and the incumbent as MIP start
    (``hint``); a solver failure (seen: HiGHS "kError [INTERNAL]" on a few tiny models) is retried once
    with default tolerances, then reported as status "error" so that the loop keeps its incumbent."""
    for feas_tol in ((1e-9, None) if backend == "highs" else (None,)):
        result = solve(m, backend, time_limit=time_limit, seed=seed, rel_gap=0.0, feas_tol=feas_tol, hint=hint)
        if (backend == "highs" and result.status != "error" and result.bound is None and hint is not None
                and result.x is not None):
            # seen: HiGHS proves a small model optimal from the MIP start in presolve and reports no dual
            # bound (-inf), so nothing is proven; solved again without presolve, it reports its bound
            stats["solves_without_presolve"] = stats.get("solves_without_presolve", 0) + 1
            result = solve(m, backend, time_limit=time_limit, seed=seed, rel_gap=0.0, feas_tol=feas_tol, hint=hint,
                           options={"presolve": "off"})
        if result.status != "error":
            return result
        stats.setdefault("solver_errors", []).append(result.message)
    return result


# ---------------------------------------------------------------------------------------------
# The outer-approximation loop shared by M-ORD and compact M-BUSHY
# ---------------------------------------------------------------------------------------------


@dataclass
class OASpec:
    """A tangent-cut model: ``build(sigma) -> (model, slots, info)`` builds the MILP with its exponential
    terms left out; ``slots`` maps a slot id to (u variable, cols, coefs) of ``L_slot``; ``decode(x,
    info)`` gives a plan; ``slot_logs(plan)`` its exact ``L`` per slot; ``var_log(plan)`` the exact log of
    the plan's variable cost; ``const`` the log of the cost every plan pays. Optional: ``encode(plan,
    info)`` the plan's values of the model's variables but the u's (a MIP start; {index: value}), and
    ``improve(plan)`` a local search run on every better plan the MILP finds."""

    build: Callable[[float], tuple[Model, dict, Any]]
    decode: Callable[[list, Any], Any]
    slot_logs: Callable[[Any], dict]
    var_log: Callable[[Any], float]
    const: float
    encode: Callable[[Any, Any], dict] | None = None
    improve: Callable[[Any], Any] | None = None
    #: the slot values of the MILP's solution itself (ln values), where a decoded plan can sit in the
    #: slots in more than one way (M-BUSHY's equal-size nodes): the surrogate is exact only when *these*
    #: have their cuts, not the decoded plan's canonical placement
    solution_logs: Callable[[list, Any], dict] | None = None


def _hint(m: Model, slots: dict, cuts: dict, sigma: float, values: dict) -> list:
    """A full start vector: ``values``, and each u at the largest of its tangent cuts (the smallest
    feasible u; a relative 1e-12 above, against rounding)."""
    x = [0.0] * len(m.names)
    for i, v in values.items():
        x[i] = v
    for slot, (u, cols, coefs) in slots.items():
        L = sum(c * x[v] for v, c in zip(cols, coefs, strict=True))
        val = 0.0
        for tau in cuts[slot]:
            if not _MIN_LOG_SLOPE <= tau - sigma <= 1e-9:
                continue
            w = math.exp(tau - sigma)
            val = max(val, w * (1 - tau + L))
        x[u] = val * (1 + 1e-12)
    return x


def _add_tangents(m: Model, slots: dict, cuts: dict, sigma: float) -> None:
    """u >= exp(L - sigma) as tangent cuts at the points ``cuts[slot]`` (ln values), with L capped at the
    incumbent's scale sigma; cuts flatter than _MIN_LOG_SLOPE are left out."""
    for slot, (u, cols, coefs) in slots.items():
        if cols:
            m.add_row(cols, coefs, None, sigma + 1e-9)
        for tau in cuts[slot]:
            if not _MIN_LOG_SLOPE <= tau - sigma <= 1e-9:
                continue
            w = math.exp(tau - sigma)  # u - w L >= w (1 - tau)
            m.add_row([u, *cols], [1.0, *(-w * c for c in coefs)], w * (1 - tau), None)


def _root_cuts(m: Model, slots: dict, cuts: dict, sigma: float, deadline: float | None, stats: dict,
               rounds: int = 20) -> None:
    """Tangent cuts at the LP relaxation's own ``L`` values, round after round, until the relaxation's
    ``u`` meet ``exp(L - sigma)`` (the convex relaxation): the MILP then starts from that bound, not from
    the cut grid's. Each round is an LP (HiGHS)."""
    import copy

    start = now()
    for r in range(rounds):
        relaxed = copy.copy(m)
        relaxed.rows = list(m.rows)
        relaxed.integer = [False] * len(m.names)
        _add_tangents(relaxed, slots, cuts, sigma)
        res = solve(relaxed, "highs", time_limit=_remaining(deadline), feas_tol=1e-9)
        if res.x is None or res.status != "optimal":
            break
        added = False
        for slot, (u, cols, coefs) in slots.items():
            L = sum(c * res.x[v] for v, c in zip(cols, coefs, strict=True))
            if math.exp(min(L - sigma, 50.0)) > res.x[u] * (1 + 1e-6) + 1e-9:
                added |= _new_cuts({slot: cuts[slot]}, {slot: float(L)})
        stats["root_rounds"] = r + 1
        stats["root_bound"] = res.objective
        if not added:
            break
    stats["root_time_s"] = now() - start


def _new_cuts(cuts: dict, logs: dict) -> bool:
    added = False
    for slot, tau in logs.items():
        if not any(abs(tau - c) <= 1e-9 * max(1.0, abs(tau)) for c in cuts[slot]):
            cuts[slot].append(float(tau))
            added = True
    return added


def outer_approximation(spec: OASpec, starts: list, *, time_limit: float | None, seed: int, backend: str,
                        max_iters: int, tol: float, stats: dict, root_cuts: bool = False,
                        lower: float = -math.inf) -> ModelOutcome:
    """The tangent-cut loop (module docstring): the best plan, its status and the proven bound.
    ``root_cuts``: first close the LP relaxation on its own L values (:func:`_root_cuts`; measured mixed:
    it helps some hard instances, slows dense ones). ``lower``: a bound on the log variable cost proven
    elsewhere (the sparse DP's), reported when the MILP's own is weaker; never a proof of the MILP."""
    deadline = None if time_limit is None else now() + time_limit
    best = min(starts, key=spec.var_log)
    best_log = spec.var_log(best)
    cuts: dict = {}
    for plan in starts:  # cuts at the start plans' own slot values, and a grid below sigma
        for slot, tau in spec.slot_logs(plan).items():
            cuts.setdefault(slot, [best_log - 2.0 * j for j in range(11)])
            _new_cuts({slot: cuts[slot]}, {slot: tau})
    stats.update(backend=backend, iterations=0, cuts=0, tolerance=tol)
    lb_log = last_obj = -math.inf
    status = "feasible"
    for it in range(1, int(max_iters) + 1):
        left = _remaining(deadline)
        if left is not None and left <= 0.05:
            break
        sigma = best_log
        t_round = now()
        m, slots, info = spec.build(sigma)
        for slot in slots:
            cuts.setdefault(slot, [sigma - 2.0 * j for j in range(11)])
        if it == 1 and root_cuts:
            _root_cuts(m, slots, cuts, sigma, deadline, stats)
        _add_tangents(m, slots, cuts, sigma)
        # objective cutoff: the incumbent's surrogate is its exact cost, 1 on this scale (its cuts are in)
        nz = [i for i, c in enumerate(m.objective) if c]
        m.add_row(nz, [m.objective[i] for i in nz], None, 1.0 + 1e-7)
        hint = None if spec.encode is None else _hint(m, slots, cuts, sigma, spec.encode(best, info))
        res = _solve(m, backend, _remaining(deadline), seed, stats, hint)
        stats.setdefault("round_s", []).append(round(now() - t_round, 3))
        stats["iterations"] = it
        stats["cuts"] = sum(len(c) for c in cuts.values())
        if res.x is None or res.status not in ("optimal", "feasible"):
            break
        plan = spec.decode(res.x, info)
        val = spec.var_log(plan)
        if val < best_log:
            best, best_log = plan, val
            if spec.improve is not None:
                better = spec.improve(plan)
                if spec.var_log(better) < best_log:
                    best, best_log = better, spec.var_log(better)
                    _new_cuts(cuts, spec.slot_logs(better))
        if res.bound is not None and res.bound > 0:
            lb_log = max(lb_log, sigma + math.log(res.bound))
        if res.objective is not None and res.objective > 0:
            last_obj = sigma + math.log(res.objective)
        added = _new_cuts(cuts, spec.slot_logs(plan))
        if spec.solution_logs is not None:
            added |= _new_cuts(cuts, spec.solution_logs(res.x, info))
        raw = None if res.bound is None else res.bound + res.bound_margin  # the solver's own dual bound
        raw_gap = best_log - (sigma + math.log(raw)) if raw is not None and raw > 0 else math.inf
        if res.status == "optimal" and (not added or raw_gap <= _PROOF_GAP):
            # the solution's own cuts are in (its surrogate is exact, so the MILP's optimum is its cost),
            # or the bound meets the incumbent to the solver's precision (a plan tied with the incumbent
            # to 1e-9 no longer costs a round: measured, 2-3 rounds became one at n = 30-40)
            status = "optimal"
            stats["proof"] = "exact surrogate" if not added else "bound"
            stats["proof_gap_log"] = max(raw_gap, 0.0) if added else 0.0
            lb_log = max(lb_log, min(best_log, last_obj))
            break
        if res.status == "optimal" and tol > 0 and best_log - lb_log <= -math.log1p(-tol):
            break  # the user's tolerance: a proven bound, not a proof
    if status != "optimal" and lower > lb_log:
        lb_log = lower
        stats["bound_from"] = "sparse dp-ld"
    gap_log = float(np.logaddexp(best_log, spec.const) - np.logaddexp(lb_log, spec.const))  # ln UB - ln LB
    if status != "optimal" and gap_log <= _PROOF_GAP:
        # stopped by a limit with the proven bound of the cost already within the proof tolerance of the
        # incumbent's: that is the module's "optimal" (a gap closed to the solver's precision), whatever
        # stopped the loop (issue 30: 19 of 52 time-limited runs said "feasible" at gaps <= 5.5e-11); the
        # last MILP's value may belong to another plan, so there is no solver value to cross-check
        stats.update(proof="bound, at a limit", proof_gap_log=max(gap_log, 0.0))
        out = _outcome(best, best_log, lb_log, last_obj, spec.const, "optimal", stats)
        out.solver_log = None
        return out
    return _outcome(best, best_log, lb_log, last_obj, spec.const, status, stats)


def _outcome(best: Any, best_log: float, lb_log: float, last_obj_log: float, const: float, status: str,
             stats: dict) -> ModelOutcome:
    """The loop's result: the best plan, and the gap between its log cost and the bound."""
    ub_total = float(np.logaddexp(best_log, const))
    lb_total = float(np.logaddexp(lb_log, const)) if lb_log > -math.inf else const
    stats["lower_bound_log_cost"] = lb_total
    # the reported bound is the proven one, never the objective itself, also for an "optimal" proven to the
    # solver's precision (a proof by gap, or an exact surrogate whose MILP value sits 1e-8 below the plan's
    # cost: issue 21, a tolerance is not an exact proof; issue 30: the bound was the objective, above the
    # proven lower_bound_log_cost)
    ratio = max(ub_total - lb_total, 0.0)
    solver_log = float(np.logaddexp(last_obj_log, const)) if status == "optimal" else None
    return ModelOutcome(best, status, stats, "" if status == "optimal" else "optimum not proven", ratio,
                        solver_log)


# ---------------------------------------------------------------------------------------------
# M-ORD
# ---------------------------------------------------------------------------------------------


def _order_build(conj: Conjunct, edges: list[tuple[int, int]], sigma: float):
    """M-ORD without its tangent cuts: (model, slots k -> (u_k, L_k), variable indices)."""
    n = conj.n
    a = conj.a
    m = Model("m-ord", sense="min")
    x = {(i, k): m.add_var(f"x_{i}_{k}") for i in range(n) for k in range(1, n)}
    y = {(e, k): m.add_var(f"y_{e}_{k}", 0, 1, False) for e in range(len(edges)) for k in range(1, n)}
    slots = {}
    Lv = {}
    d = {}
    for k in range(1, n):
        u = m.add_var(f"u_{k}", 0, None, False, 1)
        m.add_row([x[i, k] for i in range(n)], [1] * n, k, k)
        if k < n - 1:
            for i in range(n):
                m.add_row([x[i, k], x[i, k + 1]], [1, -1], None, 0)
        for e, (i, j) in enumerate(edges):
            m.add_row([y[e, k], x[i, k]], [1, -1], None, 0)
            m.add_row([y[e, k], x[j, k]], [1, -1], None, 0)
        cols = [x[i, k] for i in range(n)] + [y[e, k] for e in range(len(edges))]
        coefs = [float(a[i]) for i in range(n)] + [float(conj.b[i, j]) for i, j in edges]
        # L_k as a variable of its own: each tangent cut is then a row of two entries, not n + |E|
        # (measured: 4-10x faster solves at n = 40)
        Lk = m.add_var(f"L_{k}", None, None, False)
        m.add_row([Lk, *cols], [1.0, *(-c for c in coefs)], 0, 0)
        Lv[k] = (Lk, cols, coefs)
        slots[k] = (u, [Lk], [1.0])
    if conj.has_latency:
        t, la = conj.last, math.log(conj.alpha)
        for i in range(n):
            if i == t:
                continue
            weight = la + float(conj.lc[i]) - sigma
            d[i] = m.add_var(f"d_{i}", 0, 1, False, math.exp(weight) if weight <= 0 else 0)
            for k in range(1, n):
                m.add_row([d[i], x[t, k], x[i, k]], [1, -1, 1], 0, None)
            if weight > 0:
                m.add_row([d[i]], [1], 0, 0)  # any plan with i after t is worse than the incumbent
    return m, slots, {"x": x, "y": y, "d": d, "L": Lv, "edges": edges}


def _order_decode(n: int, values: list, info) -> list[int]:
    x = info["x"]
    pos = {i: next((k for k in range(1, n) if values[x[i, k]] > 0.5), n) for i in range(n)}
    return sorted(range(n), key=lambda i: (pos[i], i))


def _order_encode(conj: Conjunct, order: list[int], info: dict) -> dict:
    """The order's x, y, d and L values (a MIP start)."""
    pos = {i: p for p, i in enumerate(order)}
    out = {}
    for (i, k), v in info["x"].items():
        out[v] = 1.0 if pos[i] < k else 0.0
    for (e, k), v in info["y"].items():
        i, j = info["edges"][e]
        out[v] = 1.0 if pos[i] < k and pos[j] < k else 0.0
    for i, v in info["d"].items():
        out[v] = 1.0 if pos[i] > pos[conj.last] else 0.0
    for v, cols, coefs in info["L"].values():
        out[v] = sum(c * out[col] for col, c in zip(cols, coefs, strict=True))
    return out


def order_spec(conj: Conjunct, deadline: float | None = None) -> OASpec:
    n = conj.n
    edges = _edges(conj)
    const = float(order_logs(conj, list(range(n)))[-1])  # ln PM(all)
    return OASpec(
        build=lambda sigma: _order_build(conj, edges, sigma),
        decode=lambda values, info: _order_decode(n, values, info),
        slot_logs=lambda order: {k: float(v) for k, v in enumerate(order_logs(conj, order)[:-1], start=1)},
        var_log=lambda order: log_order_variable(conj, order),
        const=const, encode=lambda order, info: _order_encode(conj, order, info),
        improve=lambda order: window_dp(conj, order, deadline=_sooner(deadline, 2.0)))


def _sooner(deadline: float | None, seconds: float) -> float:
    """The earlier of ``deadline`` (a :func:`cepopt.clock.now` value, None: none) and ``seconds`` from now."""
    own = now() + seconds
    return own if deadline is None else min(own, deadline)


def _order_starts(conj: Conjunct, seed: int, deadline: float | None = None) -> list[list[int]]:
    """Good orders to start from: GREEDY's, II-GREEDY's local minimum from it (a few thousand
    evaluations at most, 1 s at most), and that improved by the window DP (:mod:`cepopt.joinorder.window`,
    2 s at most), which finds the optimum itself on most instances of up to 22 events (measured): then
    the first MILP only has to prove it. Both stop at ``deadline`` too."""
    from cepopt.joinorder.ii import ii

    start = greedy(conj)
    better = ii(conj, start, seed=seed, max_evals=2000, time_limit=max(_sooner(deadline, 1.0) - now(), 1e-3))
    return [start, better, window_dp(conj, better, deadline=_sooner(deadline, 2.0))]


#: the share of milp-order's time the sparse DP may take before the MILP starts
_SPARSE_SHARE = 0.5


def _sparse_dp_first(conj: Conjunct, starts: list, deadline: float | None, stats: dict):
    """The sparse bounded DP-LD (:mod:`cepopt.joinorder.dp_ld_sparse`) under the best start's cost, over
    the prefix sets, and over the suffix sets when the prefix cut does not bite (``dense``): an optimal
    order when one completes or closes the gap to _PROOF_GAP (a proof by DP: ``stats["proof"]`` says
    so), else None; its best lower bound on the log variable cost (-inf: none); the DP's optimum.
    Plain throughput cost only."""
    from cepopt.joinorder.dp_ld_fast import fast_applies
    from cepopt.joinorder.dp_ld_sparse import sparse_dp_ld

    if not fast_applies(conj):
        return None, -math.inf, None
    best = min(starts, key=lambda o: log_order_variable(conj, o))
    ub = log_order_variable(conj, best)
    left = _remaining(deadline)
    dp_deadline = None if left is None else now() + _SPARSE_SHARE * left
    lower = -math.inf
    runs = stats.setdefault("sparse_dp", [])
    for direction in ("forward", "backward"):
        res = sparse_dp_ld(conj, ub, incumbent=best, gap=_PROOF_GAP / 2, deadline=dp_deadline,
                           direction=direction)
        runs.append({"direction": direction, "proven": res.proven,
                     **{k: v for k, v in res.stats.items() if k not in ("layer_sets", "direction")}})
        lower = max(lower, res.lower)
        if res.proven:
            order = res.order if log_order_variable(conj, res.order) < ub else best
            how = (f"its lower bound within {max(res.stats['closed_by_gap'], 0.0):.1e} (log) of the start's cost"
                   if "closed_by_gap" in res.stats else "exact DP over the surviving sets")
            stats.update(proof=f"sparse dp-ld, {direction} ({how}; not the MILP)", iterations=0)
            if "closed_by_gap" in res.stats:
                stats["proof_gap_log"] = max(res.stats["closed_by_gap"], 0.0)
            return order, res.lower, res.value
        if res.stats.get("stopped") != "no_cut":
            break  # out of time or memory: the MILP gets the rest
    return None, lower, None


def solve_order_milp(conj: Conjunct, *, time_limit: float | None = None, seed: int = 0,
                     backend: str = "highs", max_iters: int = 50, tol: float = _EXACT_TOL,
                     root_cuts: bool = False, sparse_dp: bool = True) -> ModelOutcome:
    """The optimal order by M-ORD with tangent cuts (see the module docstring). ``sparse_dp``: first try
    the sparse bounded DP-LD under the start plan's cost (:func:`_sparse_dp_first`); it proves the
    ``hard`` preset at n = 40 in well under a second, where the MILP stalls. Its proof is reported as
    the DP's (``stats["proof"]``), and when it does not finish its lower bound is kept."""
    n = conj.n
    if conj.next_match:
        raise MethodLimitError("milp-order: skip-till-next-match costs are not modelled; use dp-ld")
    if n <= 2:
        order = [0] if n == 1 else min(([0, 1], [1, 0]), key=lambda o: log_order_variable(conj, o))
        return ModelOutcome(order, "optimal", {"iterations": 0})
    deadline = None if time_limit is None else now() + time_limit
    stats: dict = {"binaries": n * (n - 1), "continuous_y": len(_edges(conj)) * (n - 1)}
    starts = _order_starts(conj, seed, deadline)
    spec = order_spec(conj, deadline)
    lower = -math.inf
    if sparse_dp:
        order, lower, dp_value = _sparse_dp_first(conj, starts, deadline, stats)
        if order is not None:  # the DP's own optimum is the value solve() cross-checks
            return _outcome(order, spec.var_log(order), lower, dp_value, spec.const, "optimal", stats)
    return outer_approximation(spec, starts, time_limit=_remaining(deadline), seed=seed,
                               backend=backend, max_iters=max_iters, tol=tol, stats=stats, root_cuts=root_cuts,
                               lower=lower)


# ---------------------------------------------------------------------------------------------
# M-BUSHY, compact (slots) and subset flow
# ---------------------------------------------------------------------------------------------


def _tree_var_log(conj: Conjunct, tree: Any) -> float:
    """ln of Σ over non-root internal nodes of PM(node) (+ α lat): the tree cost minus constants."""
    terms: list[float] = []

    def walk(node: Any) -> list[int]:
        if isinstance(node, int):
            return [node]
        members = walk(node[0]) + walk(node[1])
        if node is not tree:
            terms.append(log_node(conj, members, tree=True))
        return members

    walk(tree)
    if conj.has_latency:
        _, lat = log_trpt_lat_tree(conj, tree)
        if lat > -math.inf:
            terms.append(math.log(conj.alpha) + lat)
    return logsumexp(terms)


def _tree_const(conj: Conjunct) -> float:
    """ln of what every tree pays: its leaves and its root."""
    n = conj.n
    return logsumexp([leaf_log(conj, i) for i in range(n)] + [log_node(conj, list(range(n)), tree=True)])


def _tree_nodes(tree: Any) -> list[list[int]]:
    """The member lists of the non-root internal nodes."""
    out: list[list[int]] = []

    def walk(node: Any) -> list[int]:
        if isinstance(node, int):
            return [node]
        members = walk(node[0]) + walk(node[1])
        out.append(members)
        return members

    walk(tree)
    return out[:-1]


def _compact_build(conj: Conjunct, edges: list[tuple[int, int]], sigma: float):
    n = conj.n
    a = conj.lc + (conj.lf if conj.leaf_filter else 0.0)
    J = n - 1  # internal nodes 0..J-1, root J-1
    m = Model("m-bushy", sense="min")
    lv = {(i, j): m.add_var(f"l_{i}_{j}") for i in range(n) for j in range(J)}
    mv = {(p, j): m.add_var(f"m_{p}_{j}") for j in range(J) for p in range(j)}
    sv = {(i, j): m.add_var(f"s_{i}_{j}", 0, 1, False) for i in range(n) for j in range(J)}
    wv = {(i, p, j): m.add_var(f"w_{i}_{p}_{j}", 0, 1, False) for i in range(n) for j in range(J) for p in range(j)}
    for i in range(n):
        m.add_row([lv[i, j] for j in range(J)], [1] * J, 1, 1)
    for p in range(J - 1):
        m.add_row([mv[p, j] for j in range(p + 1, J)], [1] * (J - p - 1), 1, 1)
    for j in range(J):
        m.add_row([lv[i, j] for i in range(n)] + [mv[p, j] for p in range(j)], [1] * (n + j), 2, 2)
        for i in range(n):
            m.add_row([sv[i, j], lv[i, j]] + [wv[i, p, j] for p in range(j)], [1, -1] + [-1] * j, 0, 0)
            for p in range(j):
                m.add_row([wv[i, p, j], mv[p, j]], [1, -1], None, 0)
                m.add_row([wv[i, p, j], sv[i, p]], [1, -1], None, 0)
                m.add_row([wv[i, p, j], mv[p, j], sv[i, p]], [1, -1, -1], -1, None)
        size = [sv[i, j] for i in range(n)]
        m.add_row(size, [1] * n, 2, min(j + 2, n))  # a binary node has 2..j+2 leaves below it
        if j + 1 < J:  # slots ordered by size: valid symmetry breaking
            m.add_row(size + [sv[i, j + 1] for i in range(n)], [1] * n + [-1] * n, None, 0)
    slots = {}
    for j in range(J - 1):
        u = m.add_var(f"u_{j}", 0, None, False, 1)
        ys = [m.add_var(f"y_{e}_{j}", 0, 1, False) for e in range(len(edges))]
        for e, (i, k2) in enumerate(edges):
            m.add_row([ys[e], sv[i, j]], [1, -1], None, 0)
            m.add_row([ys[e], sv[k2, j]], [1, -1], None, 0)
        slots[j] = (u, [sv[i, j] for i in range(n)] + ys,
                    [float(a[i]) for i in range(n)] + [float(conj.b[i, k2]) for i, k2 in edges])
    return m, slots, (lv, mv, sv)


def _compact_decode(n: int, values: list, info) -> Any:
    lv, mv, _ = info
    J = n - 1
    children: dict[int, list] = {j: [] for j in range(J)}
    for j in range(J):
        children[j] += [i for i in range(n) if values[lv[i, j]] > 0.5]
        children[j] += [("node", p) for p in range(j) if values[mv[p, j]] > 0.5]

    def build(j: int) -> Any:
        kids = [k if isinstance(k, int) else build(k[1]) for k in children[j]]
        if len(kids) != 2:
            raise RuntimeError(f"M-BUSHY decoded node {j} with {len(kids)} children")
        kids.sort(key=_min_leaf)  # the child holding the smaller index first
        return (kids[0], kids[1])

    return build(J - 1)


def _compact_slot_logs(conj: Conjunct, tree: Any) -> dict:
    """Slot j holds the j-th smallest non-root node (slots are ordered by size)."""
    nodes = sorted(_tree_nodes(tree), key=len)
    return {j: log_node(conj, members, tree=True) for j, members in enumerate(nodes)}


def _compact_solution_logs(conj: Conjunct, values: list, info) -> dict:
    """The node each non-root slot holds in the MILP's solution (the leaves ``s[i, j]`` below it):
    nodes of equal size may sit in either order, and a cut only bounds the slot it was added to."""
    _, _, sv = info
    return {j: log_node(conj, [i for i in range(conj.n) if values[sv[i, j]] > 0.5], tree=True)
            for j in range(conj.n - 2)}


def _min_leaf(t: Any) -> int:
    return t if isinstance(t, int) else min(_min_leaf(t[0]), _min_leaf(t[1]))


def _tree_starts(conj: Conjunct) -> list:
    from cepopt.joinorder.trivial import trivial

    return [zstream(conj, greedy(conj))[0], zstream(conj, trivial(conj.n))[0]]


def _tree_guard(conj: Conjunct) -> ModelOutcome | None:
    """What both M-BUSHY models share before building: refuse the costs they do not model, and answer
    trees of one or two events directly (None: build the model)."""
    if conj.next_match or conj.has_latency:
        raise MethodLimitError("milp-tree: models the any-match throughput cost only (no latency, no "
                               "next-match); use dp-b")
    if conj.n <= 2:
        return ModelOutcome(0 if conj.n == 1 else (0, 1), "optimal", {"iterations": 0})
    return None


def solve_tree_milp(conj: Conjunct, *, time_limit: float | None = None, seed: int = 0,
                    backend: str = "highs", max_iters: int = 50, tol: float = _EXACT_TOL) -> ModelOutcome:
    """The optimal bushy tree by the compact M-BUSHY with tangent cuts (see the module docstring)."""
    n = conj.n
    small = _tree_guard(conj)
    if small is not None:
        return small
    edges = _edges(conj)
    spec = OASpec(build=lambda sigma: _compact_build(conj, edges, sigma),
                  decode=lambda values, info: _compact_decode(n, values, info),
                  slot_logs=lambda tree: _compact_slot_logs(conj, tree),
                  var_log=lambda tree: _tree_var_log(conj, tree), const=_tree_const(conj),
                  solution_logs=lambda values, info: _compact_solution_logs(conj, values, info))
    out = outer_approximation(spec, _tree_starts(conj), time_limit=time_limit, seed=seed, backend=backend,
                              max_iters=max_iters, tol=tol, stats={"model": "compact", "slots": n - 1})
    return out


#: the flow model's size limit: a split is a binary column with three row entries, about 1 KB of Python
#: objects by the time the backend holds it; 2 million splits stay within a few GB
MAX_FLOW_SPLITS = 2_000_000


def _flow_build(conj: Conjunct, sigma: float, keep: np.ndarray, deadline: float | None = None):
    """The subset-flow model over the candidate nodes ``keep`` (a bool per subset): (model, splits);
    TimeLimitReached past ``deadline`` (a :func:`cepopt.clock.now` value)."""
    from cepopt.joinorder.cost import all_node_logs
    from cepopt.joinorder.dp_fast import splits_of

    n = conj.n
    full = (1 << n) - 1
    V = all_node_logs(conj, tree=True, deadline=deadline)
    S, A = splits_of(keep, n, MAX_FLOW_SPLITS)
    check(deadline, "listing the splits")
    m = Model("m-bushy-flow", sense="min")
    cost = np.where(S == full, 0.0, np.exp(np.minimum(V[S] - sigma, 700.0)))
    m.add_vars([f"y_{s}_{a}" for s, a in zip(S.tolist(), A.tolist(), strict=True)], 0, 1, True, cost.tolist())
    # rows: one per node; +1 for its own splits, -1 where a split of its parent produces it
    B = S ^ A
    parts = [(S, np.ones(len(S)))]
    parts += [(A[(A & (A - 1)) != 0], -np.ones(int(((A & (A - 1)) != 0).sum())))]
    parts += [(B[(B & (B - 1)) != 0], -np.ones(int(((B & (B - 1)) != 0).sum())))]
    cols = [np.arange(len(S)), np.nonzero((A & (A - 1)) != 0)[0], np.nonzero((B & (B - 1)) != 0)[0]]
    node = np.concatenate([p[0] for p in parts])
    coef = np.concatenate([p[1] for p in parts])
    col = np.concatenate(cols)
    order = np.argsort(node, kind="stable")
    node, coef, col = node[order], coef[order], col[order]
    bounds = np.flatnonzero(np.diff(node)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(node)], strict=True):
        rhs = 1 if node[lo] == full else 0
        m.add_row(col[lo:hi].tolist(), coef[lo:hi].tolist(), rhs, rhs)
    return m, (S, A)


def _flow_decode(values: list, splits, n: int) -> Any:
    S, A = splits
    chosen = {int(s): int(a) for s, a, v in zip(S.tolist(), A.tolist(), values, strict=True) if v > 0.5}

    def build(mask: int) -> Any:
        if mask & (mask - 1) == 0:
            return mask.bit_length() - 1
        a = chosen[mask]
        kids = sorted((build(a), build(mask ^ a)), key=_min_leaf)
        return (kids[0], kids[1])

    return build((1 << n) - 1)


def _flow_lp(m: Model, deadline: float | None, stats: dict):
    """The LP relaxation first (HiGHS): it is DP-B's linear program, its optimum the tree optimum, and
    an integral solution (the usual case) ends the search; a fractional one (ties) goes to the MILP."""
    import copy

    relaxed = copy.copy(m)
    relaxed.integer = [False] * len(m.names)
    res = solve(relaxed, "highs", time_limit=_remaining(deadline), feas_tol=1e-9)
    integral = res.status == "optimal" and res.x is not None and all(v < 1e-9 or v > 1 - 1e-9 for v in res.x)
    stats["lp_integral"] = integral
    return res if integral else None


def solve_tree_flow(conj: Conjunct, *, time_limit: float | None = None, seed: int = 0,
                    backend: str = "highs") -> ModelOutcome:
    """The optimal bushy tree by the subset-flow M-BUSHY (see the module docstring)."""
    from cepopt.joinorder.dp_fast import candidate_nodes

    n = conj.n
    small = _tree_guard(conj)
    if small is not None:
        return small
    deadline = None if time_limit is None else now() + time_limit
    starts = _tree_starts(conj)
    best = min(starts, key=lambda t: _tree_var_log(conj, t))
    sigma = _tree_var_log(conj, best)
    const = _tree_const(conj)
    try:  # the tables over 2^n subsets and the model's build stop at the deadline; too many splits refuse
        keep = candidate_nodes(conj, starts, deadline=deadline)
        m, splits = _flow_build(conj, sigma, keep, deadline)
        check(deadline, "building the flow model")
    except MethodLimitError as exc:  # TimeLimitReached too: the best start tree and the bound every tree pays
        out = _outcome(best, sigma, -math.inf, -math.inf, const, "feasible",
                       {"model": "flow", "backend": backend, "iterations": 0, "stopped": str(exc)})
        out.message = f"milp-tree: {exc}; the best start tree (ZStream over GREEDY's or the declared order)"
        return out
    stats: dict = {"model": "flow", "backend": backend, "iterations": 1, "candidate_nodes": int(keep.sum()),
                   "splits": len(splits[0]), "tolerance": 0.0}
    res = _flow_lp(m, deadline, stats)
    if res is None:
        res = _solve(m, backend, _remaining(deadline), seed, stats)
    lb_log = sigma + math.log(res.bound) if res.bound is not None and res.bound > 0 else -math.inf
    last = sigma + math.log(res.objective) if res.objective is not None and res.objective > 0 else -math.inf
    status = "feasible"
    if res.x is not None and res.status in ("optimal", "feasible"):
        tree = _flow_decode(res.x, splits, n)
        if _tree_var_log(conj, tree) < _tree_var_log(conj, best):
            best = tree
        status = "optimal" if res.status == "optimal" else "feasible"
    return _outcome(best, _tree_var_log(conj, best), lb_log, last, const, status, stats)


# ---------------------------------------------------------------------------------------------
# CP-SAT bottleneck surrogate
# ---------------------------------------------------------------------------------------------


def solve_order_cpsat(conj: Conjunct, *, time_limit: float | None = None, seed: int = 0, workers: int = 2,
                      scale: float = 1000.0) -> ModelOutcome:
    """Min-max prefix log-cardinality order (spec §7.3), with a second stage min Σ_k L_k."""
    from ortools.sat.python import cp_model

    from cepopt.formulations.cpsat import solve_cpsat
    from cepopt.formulations.scaling import IntScale, fit_scale

    n = conj.n
    if conj.next_match or conj.has_latency:
        # the bottleneck surrogate bounds Cost_ord^trpt only; a latency term voids its (n-1) guarantee
        raise MethodLimitError("cpsat-order: models the any-match throughput cost only (no latency, no "
                               "next-match); use dp-ld")
    if n <= 2:
        order = [0] if n == 1 else min(([0, 1], [1, 0]), key=lambda o: log_order_variable(conj, o))
        return ModelOutcome(order, "feasible", {"scale": scale})
    deadline = None if time_limit is None else now() + time_limit
    edges = _edges(conj)
    coefs = [float(v) for v in conj.a] + [float(conj.b[i, j]) for i, j in edges]
    # the second stage sums n - 1 prefixes, each at most the sum of all |coefs|
    ints = IntScale(fit_scale(scale, (n - 1) * sum(map(abs, coefs))))
    scale = ints.factor
    A = [ints.to_int(v) for v in coefs[:n]]
    B = [ints.to_int(v) for v in coefs[n:]]
    model = cp_model.CpModel()
    x = {(i, k): model.NewBoolVar(f"x_{i}_{k}") for i in range(n) for k in range(1, n)}
    y = {(e, k): model.NewBoolVar(f"y_{e}_{k}") for e in range(len(edges)) for k in range(1, n)}
    lo = sum(min(v, 0) for v in A) + sum(B)
    hi = sum(max(v, 0) for v in A)
    M = model.NewIntVar(lo, hi, "M")
    Ls = []
    for k in range(1, n):
        model.Add(sum(x[i, k] for i in range(n)) == k)
        if k < n - 1:
            for i in range(n):
                model.AddImplication(x[i, k], x[i, k + 1])
        for e, (i, j) in enumerate(edges):
            model.AddBoolAnd([x[i, k], x[j, k]]).OnlyEnforceIf(y[e, k])
            model.AddBoolOr([x[i, k].Not(), x[j, k].Not(), y[e, k]])
        L = sum(A[i] * x[i, k] for i in range(n)) + sum(B[e] * y[e, k] for e in range(len(edges)))
        Ls.append(L)
        model.Add(M >= L)
    model.Minimize(M)
    start = greedy(conj)
    hint = [(x[i, k], int(start.index(i) < k)) for i in range(n) for k in range(1, n)]
    first_limit = None if deadline is None else max((deadline - now()) / 2, 0.01)
    r1 = solve_cpsat(model, time_limit=first_limit, seed=seed, workers=workers, hint=hint)
    stats = {"scale": scale, "workers": workers, "seed": seed, "stage1_status": r1.status,
             "stage1_bottleneck": None if r1.objective is None else r1.objective / scale,
             "parameters": r1.parameters, "surrogate": "min max_k ln PM(prefix k), then min sum_k"}
    if r1.objective is None:
        return ModelOutcome(None, r1.status, stats, "cpsat-order: no solution within the limit")
    order = _decode_order(r1, x, n)
    model.Add(M <= int(round(r1.objective)))
    model.Minimize(sum(Ls))
    hint = [(x[i, k], int(order.index(i) < k)) for i in range(n) for k in range(1, n)]
    left = None if deadline is None else max(deadline - now(), 0.01)
    r2 = solve_cpsat(model, time_limit=left, seed=seed, workers=workers, hint=hint)
    stats["stage2_status"] = r2.status
    final = r1
    if r2.objective is not None:
        order = _decode_order(r2, x, n)
        final = r2
    solver_log = None
    if not conj.has_latency:
        # The integer model's own value of the plan: its scaled prefix logs, plus the constant last term.
        # Each L_k rounds at most n + |E| coefficients by <= 0.5/scale: that bounds the log error.
        logs = [final.solver.Value(L) / scale for L in Ls]
        logs.append(float(order_logs(conj, order)[-1]))
        solver_log = logsumexp(logs)
        # solve() compares the sum over conjuncts, which is at least this log when positive
        stats["objective_tolerance"] = ints.tolerance(n + len(edges), max(solver_log, 0.0))
    return ModelOutcome(order, "feasible", stats, solver_log=solver_log)


def _decode_order(result, x, n: int) -> list[int]:
    pos = {i: next((k for k in range(1, n) if result.value(x[i, k])), n) for i in range(n)}
    return sorted(range(n), key=lambda i: (pos[i], i))
