"""MILP and CP-SAT models of join-order plan selection (spec §7; an extension [X], not in the paper).

Notation (spec §7.0): ``a_i = ln(W r_i sel_ii)``, ``b_ij = ln sel_ij < 0`` on the predicate pairs E.
The cost is a sum of exponentials of linear functions of binaries (a convex MINLP):

- **M-ORD** (:func:`solve_order_milp`, spec §7.1): ``x[i,k]`` = event i is among the first k (nested
  prefixes ⇔ a permutation), ``y[e,k] <= x[i,k], x[j,k]`` (= x_i x_j at the optimum since b < 0),
  ``L_k = Σ a_i x[i,k] + Σ b_e y[e,k] = ln PM(S_k)`` exactly; ``exp(L_k)`` is replaced by ``u_k`` under
  tangent cuts ``u_k >= e^τ (1 + L_k - τ)`` (outer approximation, spec §7.2 A). The loop solves the
  MILP (gap 0), evaluates the decoded order exactly, stops when ``UB - LB <= tol·UB`` ("optimal" only
  if the gap is closed) and otherwise adds cuts at the incumbent's ``L_k``; it converges finitely. The
  objective is scaled by ``e^{-σ}`` with σ the log of the best plan known (mandatory: raw costs span
  1e3..1e100+), and ``L_k <= σ`` is a valid cut (one term of the optimum never exceeds the incumbent's
  total). The constant last term PM(all) is dropped. Latency (§6.1): ``d_i >= x[t,k] - x[i,k]``
  adds ``α W r_i d_i`` exactly.
- **M-BUSHY** (:func:`solve_tree_milp`, spec §7.4): n-1 internal-node slots in topological order;
  ``l[i,j]`` leaf i is a child of node j, ``m[j',j]`` node j' is a child of node j, ``s[i,j]`` leaf i is
  below node j (``s = l + Σ w``, ``w = m ∧ s`` linearised), slots ordered by size (valid symmetry
  breaking); ``L_j`` as above; the same tangent-cut loop. Leaves and root are constant.
- **CP-SAT bottleneck** (:func:`solve_order_cpsat`, spec §7.3): integer logs ``A_i = round(s·a_i)``,
  ``B_e = round(s·b_e)`` (s = ``scale``, default 1000, lowered to a power of ten when the sums would
  leave 64-bit integers, e.g. Kleene logs of 1e200), minimise ``M >= L_k`` (k < n), then, with M
  fixed at its optimum, minimise ``Σ_k L_k``. An (n-1)-approximation of Cost_ord, not exact; no latency.

MILPs are written once in PuLP and solved by :func:`cepopt.formulations.milp.solve_milp` (backend
``highs`` with feasibility tolerance 1e-9, ``scip`` or ``cbc``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pulp

from cepopt.errors import MethodLimitError
from cepopt.formulations.milp import solve_milp
from cepopt.joinorder.cost import (
    leaf_log,
    log_lat_ord,
    log_node,
    log_trpt_lat_tree,
    logsumexp,
    order_logs,
)
from cepopt.joinorder.greedy import greedy
from cepopt.joinorder.problem import Conjunct
from cepopt.joinorder.zstream import zstream

__all__ = ["ModelOutcome", "solve_order_cpsat", "solve_order_milp", "solve_tree_milp"]

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


def _solve(prob: pulp.LpProblem, backend: str, time_limit: float | None, seed: int, stats: dict):
    """solve_milp with HiGHS's tight feasibility tolerance; a solver failure (seen: HiGHS "kError
    [INTERNAL]" on a few tiny models) is retried once with default tolerances, then reported as
    status "error" so that the loop keeps its incumbent."""
    for feas_tol in ((1e-9, None) if backend == "highs" else (None,)):
        result = solve_milp(prob, backend=backend, time_limit=time_limit, seed=seed, rel_gap=0.0,
                            feas_tol=feas_tol)
        if result.status != "error":
            return result
        stats.setdefault("solver_errors", []).append(result.message)
    return result


def _add_tangents(prob: pulp.LpProblem, u, L, cuts: list[float], sigma: float, tag: int) -> None:
    """u >= exp(L - sigma) as tangent cuts at the points ``cuts`` (ln PM values), with L capped at the
    incumbent's scale sigma; cuts flatter than _MIN_LOG_SLOPE are left out."""
    if not L.isNumericalConstant():
        prob += L <= sigma + 1e-9, f"cap_{tag}"
    for c_idx, tau in enumerate(cuts):
        if not _MIN_LOG_SLOPE <= tau - sigma <= 1e-9:
            continue
        prob += u >= math.exp(tau - sigma) * (1 + L - tau), f"cut_{tag}_{c_idx}"


def _outcome(best: Any, best_log: float, lb_log: float, last_obj_log: float, const: float, status: str,
             stats: dict) -> ModelOutcome:
    """The tangent-cut loop's result: the best plan, and the gap between its log cost and the bound."""
    ub_total = float(np.logaddexp(best_log, const))
    lb_total = float(np.logaddexp(lb_log, const)) if lb_log > -math.inf else const
    stats["lower_bound_log_cost"] = lb_total
    ratio = 0.0 if status == "optimal" else max(ub_total - lb_total, 0.0)
    solver_log = float(np.logaddexp(last_obj_log, const)) if status == "optimal" else None
    return ModelOutcome(best, status, stats, "" if status == "optimal" else "optimum not proven", ratio,
                        solver_log)


#: the default ``tol``: a gap this small counts as closed (the solvers' own numerical accuracy)
_EXACT_TOL = 1e-7


def _gap_status(best_log: float, lb_log: float) -> str:
    """The status on stopping at the ``tol`` criterion: a user's larger tol proves only a lower bound,
    so "optimal" (bound = objective, surrogate cross-checked against the cost) needs a closed gap."""
    return "optimal" if best_log - lb_log <= -math.log1p(-_EXACT_TOL) else "feasible"


def _initial_cuts(sigma: float) -> list[float]:
    return [sigma - 2.0 * j for j in range(11)]


def _add_cut(cuts: list[float], tau: float) -> bool:
    if any(abs(tau - c) <= 1e-9 * max(1.0, abs(tau)) for c in cuts):
        return False
    cuts.append(tau)
    return True


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else deadline - time.perf_counter()


# ---------------------------------------------------------------------------------------------
# M-ORD
# ---------------------------------------------------------------------------------------------


def _order_var_log(conj: Conjunct, order: list[int]) -> float:
    """ln of the variable part of the order's cost: Σ_{k<n} PM_k + α lat."""
    terms = list(order_logs(conj, order)[:-1])
    if conj.has_latency:
        lat = log_lat_ord(conj, order)
        if lat > -math.inf:
            terms.append(math.log(conj.alpha) + lat)
    return logsumexp(terms)


def solve_order_milp(conj: Conjunct, *, time_limit: float | None = None, seed: int = 0,
                     backend: str = "highs", max_iters: int = 50, tol: float = _EXACT_TOL) -> ModelOutcome:
    """The optimal order by M-ORD with tangent cuts (see the module docstring)."""
    n = conj.n
    if conj.next_match:
        raise MethodLimitError("milp-order: skip-till-next-match costs are not modelled; use dp-ld")
    if n <= 2:
        order = [0] if n == 1 else min(([0, 1], [1, 0]), key=lambda o: _order_var_log(conj, o))
        return ModelOutcome(order, "optimal", {"iterations": 0})
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    const = float(order_logs(conj, list(range(n)))[-1])  # ln PM(all)
    a = conj.a
    edges = _edges(conj)
    best = greedy(conj)
    best_log = _order_var_log(conj, best)
    cuts = {k: _initial_cuts(best_log) for k in range(1, n)}
    t = conj.last if conj.has_latency else None
    stats: dict = {"backend": backend, "iterations": 0, "binaries": n * (n - 1),
                   "continuous_y": len(edges) * (n - 1), "cuts": 0}
    lb_log = -math.inf
    last_obj_log = -math.inf
    status = "feasible"
    for it in range(1, int(max_iters) + 1):
        left = _remaining(deadline)
        if left is not None and left <= 0.05:
            break
        sigma = best_log
        prob = pulp.LpProblem("m_ord", pulp.LpMinimize)
        x = {(i, k): prob.add_variable(f"x_{i}_{k}", cat="Binary") for i in range(n) for k in range(1, n)}
        y = {(e, k): prob.add_variable(f"y_{e}_{k}", 0, 1) for e in range(len(edges)) for k in range(1, n)}
        u = {k: prob.add_variable(f"u_{k}", 0) for k in range(1, n)}
        objective = pulp.lpSum(u.values())
        for k in range(1, n):
            prob += pulp.lpSum(x[i, k] for i in range(n)) == k, f"size_{k}"
            if k < n - 1:
                for i in range(n):
                    prob += x[i, k] <= x[i, k + 1], f"nest_{i}_{k}"
            for e, (i, j) in enumerate(edges):
                prob += y[e, k] <= x[i, k], f"ya_{e}_{k}"
                prob += y[e, k] <= x[j, k], f"yb_{e}_{k}"
            L = pulp.lpSum(float(a[i]) * x[i, k] for i in range(n)) + pulp.lpSum(
                float(conj.b[i, j]) * y[e, k] for e, (i, j) in enumerate(edges))
            _add_tangents(prob, u[k], L, cuts[k], sigma, k)
        if t is not None:
            la = math.log(conj.alpha)
            for i in range(n):
                if i == t:
                    continue
                d = prob.add_variable(f"d_{i}", 0, 1)
                for k in range(1, n):
                    prob += d >= x[t, k] - x[i, k], f"lat_{i}_{k}"
                weight = la + float(conj.lc[i]) - sigma
                if weight > 0:
                    prob += d == 0, f"latcap_{i}"  # any plan with i after t is worse than the incumbent
                else:
                    objective += math.exp(weight) * d
        prob += objective
        res = _solve(prob, backend, left, seed, stats)
        stats["iterations"] = it
        stats["cuts"] = sum(len(c) for c in cuts.values())
        if res.status not in ("optimal", "feasible"):
            break
        pos = {i: next((k for k in range(1, n) if res.values.get(f"x_{i}_{k}", 0.0) > 0.5), n)
               for i in range(n)}
        order = sorted(range(n), key=lambda i: (pos[i], i))
        val = _order_var_log(conj, order)
        if val < best_log:
            best, best_log = order, val
        if res.bound is not None and res.bound > 0:
            lb_log = max(lb_log, sigma + math.log(res.bound))
        if res.objective is not None and res.objective > 0:
            last_obj_log = sigma + math.log(res.objective)
        if res.status == "optimal" and best_log - lb_log <= -math.log1p(-tol):
            status = _gap_status(best_log, lb_log)
            break
        added = False
        for k, lk in enumerate(order_logs(conj, order)[:-1], start=1):
            added |= _add_cut(cuts[k], float(lk))
        if not added and res.status == "optimal":
            # The incumbent's cuts are in: its surrogate is exact, so the bound is tight.
            status = "optimal"
            break
    return _outcome(best, best_log, lb_log, last_obj_log, const, status, stats)


# ---------------------------------------------------------------------------------------------
# M-BUSHY
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


def solve_tree_milp(conj: Conjunct, *, time_limit: float | None = None, seed: int = 0,
                    backend: str = "highs", max_iters: int = 50, tol: float = _EXACT_TOL) -> ModelOutcome:
    """The optimal bushy tree by M-BUSHY with tangent cuts (see the module docstring)."""
    n = conj.n
    if conj.next_match or conj.has_latency:
        raise MethodLimitError("milp-tree: models the any-match throughput cost only (no latency, no "
                               "next-match); use dp-b")
    if n <= 2:
        return ModelOutcome(0 if n == 1 else (0, 1), "optimal", {"iterations": 0})
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    a = conj.lc + (conj.lf if conj.leaf_filter else 0.0)
    edges = _edges(conj)
    J = n - 1  # internal nodes 0..J-1, root J-1
    root = J - 1
    const_terms = [leaf_log(conj, i) for i in range(n)]
    const_terms.append(log_node(conj, list(range(n)), tree=True))
    const = logsumexp(const_terms)
    start = zstream(conj, greedy(conj))[0]
    best, best_log = start, _tree_var_log(conj, start)
    cuts = {j: _initial_cuts(best_log) for j in range(root)}
    stats: dict = {"backend": backend, "iterations": 0, "cuts": 0}
    lb_log = -math.inf
    last_obj_log = -math.inf
    status = "feasible"
    for it in range(1, int(max_iters) + 1):
        left = _remaining(deadline)
        if left is not None and left <= 0.05:
            break
        sigma = best_log
        prob = pulp.LpProblem("m_bushy", pulp.LpMinimize)
        lv = {(i, j): prob.add_variable(f"l_{i}_{j}", cat="Binary") for i in range(n) for j in range(J)}
        mv = {(p, j): prob.add_variable(f"m_{p}_{j}", cat="Binary") for j in range(J) for p in range(j)}
        sv = {(i, j): prob.add_variable(f"s_{i}_{j}", 0, 1) for i in range(n) for j in range(J)}
        wv = {(i, p, j): prob.add_variable(f"w_{i}_{p}_{j}", 0, 1)
              for i in range(n) for j in range(J) for p in range(j)}
        u = {j: prob.add_variable(f"u_{j}", 0) for j in range(root)}
        for i in range(n):
            prob += pulp.lpSum(lv[i, j] for j in range(J)) == 1, f"leaf_{i}"
        for p in range(root):
            prob += pulp.lpSum(mv[p, j] for j in range(p + 1, J)) == 1, f"parent_{p}"
        for j in range(J):
            prob += (pulp.lpSum(lv[i, j] for i in range(n)) + pulp.lpSum(mv[p, j] for p in range(j))
                     == 2), f"binary_{j}"
            for i in range(n):
                prob += sv[i, j] == lv[i, j] + pulp.lpSum(wv[i, p, j] for p in range(j)), f"sub_{i}_{j}"
                for p in range(j):
                    prob += wv[i, p, j] <= mv[p, j], f"wa_{i}_{p}_{j}"
                    prob += wv[i, p, j] <= sv[i, p], f"wb_{i}_{p}_{j}"
                    prob += wv[i, p, j] >= mv[p, j] + sv[i, p] - 1, f"wc_{i}_{p}_{j}"
            size = pulp.lpSum(sv[i, j] for i in range(n))
            prob += size >= 2, f"min_size_{j}"  # valid: a binary node has at least two leaves
            prob += size <= min(j + 2, n), f"max_size_{j}"  # slot j has at most j+1 slots below it
            if j + 1 < J:
                prob += (pulp.lpSum(sv[i, j] for i in range(n))
                         <= pulp.lpSum(sv[i, j + 1] for i in range(n))), f"sym_{j}"
        for j in range(root):
            yv = {e: prob.add_variable(f"y_{e}_{j}", 0, 1) for e in range(len(edges))}
            for e, (i, k2) in enumerate(edges):
                prob += yv[e] <= sv[i, j], f"ya_{e}_{j}"
                prob += yv[e] <= sv[k2, j], f"yb_{e}_{j}"
            L = pulp.lpSum(float(a[i]) * sv[i, j] for i in range(n)) + pulp.lpSum(
                float(conj.b[i, k2]) * yv[e] for e, (i, k2) in enumerate(edges))
            _add_tangents(prob, u[j], L, cuts[j], sigma, j)
        prob += pulp.lpSum(u.values())
        res = _solve(prob, backend, left, seed, stats)
        stats["iterations"] = it
        stats["cuts"] = sum(len(c) for c in cuts.values())
        if res.status not in ("optimal", "feasible"):
            break
        tree, node_sets = _decode_tree(res.values, n, J)
        val = _tree_var_log(conj, tree)
        if val < best_log:
            best, best_log = tree, val
        if res.bound is not None and res.bound > 0:
            lb_log = max(lb_log, sigma + math.log(res.bound))
        if res.objective is not None and res.objective > 0:
            last_obj_log = sigma + math.log(res.objective)
        if res.status == "optimal" and best_log - lb_log <= -math.log1p(-tol):
            status = _gap_status(best_log, lb_log)
            break
        added = False
        for j, members in node_sets.items():
            if j < root:
                added |= _add_cut(cuts[j], log_node(conj, members, tree=True))
        if not added and res.status == "optimal":
            status = "optimal"
            break
    stats["slots"] = J
    return _outcome(best, best_log, lb_log, last_obj_log, const, status, stats)


def _min_leaf(t: Any) -> int:
    return t if isinstance(t, int) else min(_min_leaf(t[0]), _min_leaf(t[1]))


def _decode_tree(values: dict, n: int, J: int) -> tuple[Any, dict[int, list[int]]]:
    children: dict[int, list[Any]] = {j: [] for j in range(J)}
    for j in range(J):
        for i in range(n):
            if values.get(f"l_{i}_{j}", 0.0) > 0.5:
                children[j].append(("leaf", i))
        for p in range(j):
            if values.get(f"m_{p}_{j}", 0.0) > 0.5:
                children[j].append(("node", p))
    sets: dict[int, list[int]] = {}

    def build(j: int) -> Any:
        kids = []
        members: list[int] = []
        for kind, v in children[j]:
            if kind == "leaf":
                kids.append(v)
                members.append(v)
            else:
                kids.append(build(v))
                members.extend(sets[v])
        sets[j] = members
        if len(kids) != 2:
            raise RuntimeError(f"M-BUSHY decoded node {j} with {len(kids)} children")
        kids.sort(key=_min_leaf)  # the child holding the smaller index first
        return (kids[0], kids[1])

    return build(J - 1), sets


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
        order = [0] if n == 1 else min(([0, 1], [1, 0]), key=lambda o: _order_var_log(conj, o))
        return ModelOutcome(order, "feasible", {"scale": scale})
    deadline = None if time_limit is None else time.perf_counter() + time_limit
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
    first_limit = None if deadline is None else max((deadline - time.perf_counter()) / 2, 0.01)
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
    left = None if deadline is None else max(deadline - time.perf_counter(), 0.01)
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
