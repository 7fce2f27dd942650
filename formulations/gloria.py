"""Gloria as a pairwise min-sum labelling problem: CP-SAT and MILP (specs/gloria.md §7.2).

Over any candidate graph (cepopt.gloria.graph.CandidateGraph: NOPRUNE, pruned or exhaustive nodes):

    x[p,o] in {0,1}                    one option (node) per pool:  sum_o x[p,o] = 1
    y[a,b,o,o'] in {0,1}               one per *allowed* (derivable) pair of adjacent pools
    sum_o' y[a,b,o,o'] = x[a,o]        sum_o y[a,b,o,o'] = x[b,o']
    min  sum u[p,o] x[p,o] + sum w(o,o') y[a,b,o,o']

``u`` = start edges + Kleene cycle weight + end edges, ``w`` = the §3.2 edge weight. A pair table that
allows every combination and whose weight depends on one side only (e.g. the entry edges of a Kleene
super-pool, A7) is folded into that side's unary weight. The local-polytope LP of this model is integral
on forest-shaped pool graphs (§7.3), and in practice on every published workload: both methods solve the
LP relaxation first (HiGHS, in the model container :mod:`cepopt.formulations.model`), and an integral
LP optimum within the objective's unit of the LP bound is the proven answer (stats ``lp_first``,
``lp_integral``; on bus MixWorkload 120 1 s where CP-SAT's presolve alone took 8 s). Otherwise the 0/1
model goes to CP-SAT (LP-heavy: linearization_level 2 and the ``max_lp`` subsolver) or the MILP backend.

Under ``fork_accounting="once"`` the weights are exact fractions (cepopt.gloria.cost): both models then
take them times the least common multiple of their denominators (:func:`integral_weights`; integers
again, as long as they stay within 64-bit integers) and divide the objective and bound back.

Float weights (non-integral frequencies) are left to the container, which scales them to integers for
CP-SAT and certifies a proof only to the solvers' precision; solve() re-scores the decoded plan in exact
arithmetic.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from fractions import Fraction

from cepopt.clock import now
from cepopt.formulations.model import Model, certify, solve, unit_of
from cepopt.formulations.scaling import MAX_INT_SUM
from cepopt.gloria.graph import CandidateGraph, EdgeTable

__all__ = ["LabelModel", "integral_weights", "label_container", "label_model", "solve_cpsat_gloria",
           "solve_milp_gloria"]


@dataclass
class LabelModel:
    """The model's data after folding: unary weights per pool and the remaining pair tables."""

    unary: list[list[float]]
    pairs: dict[tuple[int, int], EdgeTable]
    folded: int


def label_model(graph: CandidateGraph) -> LabelModel:
    unary = [[graph.inner[p][j] + graph.end[p][j] for j in range(len(graph.options[p]))]
             for p in range(len(graph.options))]
    pairs = {}
    folded = 0
    for (a, b), table in graph.allowed.items():
        na, nb = len(graph.options[a]), len(graph.options[b])
        if len(table) == na * nb and na and nb:
            by_i = all(table[(i, j)] == table[(i, 0)] for i in range(na) for j in range(nb))
            if by_i:
                for i in range(na):
                    unary[a][i] += table[(i, 0)]
                folded += 1
                continue
            by_j = all(table[(i, j)] == table[(0, j)] for i in range(na) for j in range(nb))
            if by_j:
                for j in range(nb):
                    unary[b][j] += table[(0, j)]
                folded += 1
                continue
        pairs[(a, b)] = table
    return LabelModel(unary, pairs, folded)


def integral_weights(lm: LabelModel) -> tuple[LabelModel, int]:
    """(model, d): the weights times d, the least common multiple of the denominators of its
    :class:`~fractions.Fraction` weights, so that they are exact integers. d = 1 and the model unchanged
    when no weight is a Fraction; d = 1 and the Fractions as floats (the usual scaling then applies)
    when some weight is a float or the scaled weights would pass 64-bit integers."""
    values = [w for row in lm.unary for w in row] + [w for t in lm.pairs.values() for w in t.values()]
    fractions = [w for w in values if isinstance(w, Fraction)]
    if not fractions:
        return lm, 1
    d = math.lcm(*(w.denominator for w in fractions))
    exact = not any(isinstance(w, float) for w in values)
    if exact and sum(abs(w) for w in values) * d <= MAX_INT_SUM:
        def conv(w):
            return int(w * d)
    else:
        d = 1

        def conv(w):
            return float(w)
    return LabelModel([[conv(w) for w in row] for row in lm.unary],
                      {k: {ij: conv(w) for ij, w in t.items()} for k, t in lm.pairs.items()}, lm.folded), d


def label_container(lm: LabelModel) -> tuple[Model, list[list[int]]]:
    """The labelling model in the container (minimised): x per option, y per allowed pair, the weights
    as given (ints after :func:`integral_weights`, or floats)."""
    m = Model("gloria-label", sense="min")
    x = [[m.add_var(f"x{p}_{j}", 0, 1, True, w) for j, w in enumerate(row)] for p, row in enumerate(lm.unary)]
    for row in x:
        m.add_row(row, [1] * len(row), 1, 1)
    for (a, b), table in lm.pairs.items():
        out: dict[int, list[int]] = {}
        inc: dict[int, list[int]] = {}
        for (i, j), w in table.items():
            y = m.add_var(f"y{a}_{b}_{i}_{j}", 0, 1, True, w)
            out.setdefault(i, []).append(y)
            inc.setdefault(j, []).append(y)
        for i, xi in enumerate(x[a]):
            m.add_row(out.get(i, []) + [xi], [1] * len(out.get(i, [])) + [-1], 0, 0)
        for j, xj in enumerate(x[b]):
            m.add_row(inc.get(j, []) + [xj], [1] * len(inc.get(j, [])) + [-1], 0, 0)
    return m, x


def _lp_first(m: Model, x: list[list[int]], time_limit: float | None, stats: dict):
    """The LP relaxation (HiGHS): the local polytope is integral on forest-shaped pool graphs and, in
    practice, on the published workloads (bus MixWorkload 120: an integral LP in 1 s where CP-SAT's presolve
    alone took 8 s). An integral LP optimum is the optimum, proven when its exact value is within the
    objective's unit of the LP bound (:func:`~cepopt.formulations.model.certify`). Returns (choice,
    objective, bound) or None."""
    start = now()
    relaxed = copy.copy(m)
    relaxed.integer = [False] * len(m.names)
    res = solve(relaxed, "highs", time_limit=time_limit)
    stats["lp_time_s"] = now() - start
    if res.status != "optimal" or res.x is None or any(1e-9 < v < 1 - 1e-9 for v in res.x):
        stats["lp_integral"] = False
        return None
    stats["lp_integral"] = True
    values = [round(v) for v in res.x]
    objective = m.value(values)
    bound = res.objective - 1e-9 * max(1.0, abs(float(res.objective)))
    if not certify(objective, bound, unit_of(m), "min"):
        return None
    choice = [next(j for j, v in enumerate(row) if values[v]) for row in x]
    return choice, objective, objective


def _solve_label(graph: CandidateGraph, backend: str, time_limit: float | None, seed: int, workers: int,
                 hint: list[int] | None):
    """(choice or None, status, objective, bound, stats): the LP first, then ``backend`` on the 0/1 model."""
    start = now()
    lm, denominator = integral_weights(label_model(graph))
    m, x = label_container(lm)
    stats: dict = {"backend": backend, "x_variables": sum(len(r) for r in x),
                   "y_variables": len(m.names) - sum(len(r) for r in x), "constraints": len(m.rows),
                   "folded_pair_tables": lm.folded, "scale": denominator, "lp_first": True}
    lp = _lp_first(m, x, time_limit, stats)
    if lp is not None:
        choice, objective, bound = lp
        stats["solver_wall_time"] = now() - start
        return choice, "optimal", objective / denominator, bound / denominator, stats
    left = None if time_limit is None else max(time_limit - (now() - start), 0.01)
    start_vector = None
    if hint is not None:
        start_vector = [0] * len(m.names)
        for p, j in enumerate(hint):
            start_vector[x[p][j]] = 1
    res = solve(m, backend, time_limit=left, seed=seed, workers=workers, lp_heavy=True,
                feas_tol=1e-9 if backend == "highs" else None, hint=start_vector if backend == "cpsat" else None)
    stats.update(res.stats)
    stats["solver_wall_time"] = now() - start
    bound = None if res.bound is None else res.bound / denominator
    if res.x is None or res.status not in ("optimal", "feasible"):
        return None, res.status, None, bound, stats
    choice = [next(j for j, v in enumerate(row) if res.x[v] > 0.5) for row in x]
    return choice, res.status, res.objective / denominator, bound, stats


def solve_cpsat_gloria(graph: CandidateGraph, *, time_limit: float | None, seed: int, workers: int = 2,
                       lp_heavy: bool = True, hint: list[int] | None = None):
    """(choice or None, status, objective, bound, stats): the LP relaxation first (an integral optimum is
    the answer), else CP-SAT (LP-heavy; the container scales the weights to integers and certifies)."""
    return _solve_label(graph, "cpsat", time_limit, seed, workers, hint)


def solve_milp_gloria(graph: CandidateGraph, *, time_limit: float | None, seed: int, backend: str = "highs"):
    """(choice or None, status, objective, bound, stats): the LP relaxation first, else the MILP
    (``backend`` = highs | scip | cbc)."""
    return _solve_label(graph, backend, time_limit, seed, 2, None)
