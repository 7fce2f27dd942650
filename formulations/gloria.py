"""Gloria as a pairwise min-sum labelling problem: CP-SAT and MILP (specs/gloria.md §7.2).

Over any candidate graph (cepopt.gloria.graph.CandidateGraph: NOPRUNE, pruned or exhaustive nodes):

    x[p,o] in {0,1}                    one option (node) per pool:  sum_o x[p,o] = 1
    y[a,b,o,o'] in {0,1}               one per *allowed* (derivable) pair of adjacent pools
    sum_o' y[a,b,o,o'] = x[a,o]        sum_o y[a,b,o,o'] = x[b,o']
    min  sum u[p,o] x[p,o] + sum w(o,o') y[a,b,o,o']

``u`` = start edges + Kleene cycle weight + end edges, ``w`` = the §3.2 edge weight. A pair table that
allows every combination and whose weight depends on one side only (e.g. the entry edges of a Kleene
super-pool, A7) is folded into that side's unary weight. The local-polytope LP of this model is integral
on forest-shaped pool graphs (§7.3), so the LP carries the model: CP-SAT runs with the LP-heavy
parameters (linearization_level 2 and the ``max_lp`` subsolver).

Under ``fork_accounting="once"`` the weights are exact fractions (cepopt.gloria.cost): both models then
take them times the least common multiple of their denominators (:func:`integral_weights`; integers
again, as long as they stay within 64-bit integers) and divide the objective and bound back.

CP-SAT needs integer coefficients: weights are used as they are when integral (integer frequencies) and
within 64-bit integers, else multiplied by a power of ten (keeping the objective below about 1e9; below 1
for huge weights, :func:`~cepopt.formulations.scaling.integer_scale`) and rounded; the scale and the
rounding tolerance (stats ``scale``, ``objective_tolerance``) are reported, and solve() re-scores the
decoded plan in exact arithmetic. The MILP takes the weights as they are
(:func:`~cepopt.formulations.milp.solve_milp` scales a huge objective itself).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import pulp
from ortools.sat.python import cp_model

from cepopt.formulations.cpsat import cpsat_stats, solve_cpsat
from cepopt.formulations.milp import solve_milp
from cepopt.formulations.scaling import MAX_INT_SUM, IntScale, integer_scale
from cepopt.gloria.graph import CandidateGraph

__all__ = ["LabelModel", "integral_weights", "label_model", "solve_cpsat_gloria", "solve_milp_gloria"]


@dataclass
class LabelModel:
    """The model's data after folding: unary weights per pool and the remaining pair tables."""

    unary: list[list[float]]
    pairs: dict[tuple[int, int], dict[tuple[int, int], float]]
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


def _scale(lm: LabelModel) -> IntScale:
    values = [w for row in lm.unary for w in row] + [w for t in lm.pairs.values() for w in t.values()]
    return integer_scale(values, target=1e9 / max(len(values), 1), max_power=None)


def solve_cpsat_gloria(graph: CandidateGraph, *, time_limit: float | None, seed: int, workers: int = 2,
                       lp_heavy: bool = True, hint: list[int] | None = None):
    """(choice or None, status, objective, bound, stats) from CP-SAT."""
    lm, denominator = integral_weights(label_model(graph))
    scale = _scale(lm)
    model = cp_model.CpModel()
    x = [[model.NewBoolVar(f"x{p}_{j}") for j in range(len(row))] for p, row in enumerate(lm.unary)]
    coeffs: list[int] = []
    variables: list = []
    for p, row in enumerate(lm.unary):
        model.AddExactlyOne(x[p])
        for j, w in enumerate(row):
            if scale.to_int(w):
                coeffs.append(scale.to_int(w))
                variables.append(x[p][j])
    n_y = 0
    for (a, b), table in lm.pairs.items():
        out: dict[int, list] = {}
        inc: dict[int, list] = {}
        for (i, j), w in table.items():
            y = model.NewBoolVar(f"y{a}_{b}_{i}_{j}")
            n_y += 1
            out.setdefault(i, []).append(y)
            inc.setdefault(j, []).append(y)
            if scale.to_int(w):
                coeffs.append(scale.to_int(w))
                variables.append(y)
        for i in range(len(lm.unary[a])):
            model.Add(cp_model.LinearExpr.Sum(out.get(i, [])) == x[a][i])
        for j in range(len(lm.unary[b])):
            model.Add(cp_model.LinearExpr.Sum(inc.get(j, [])) == x[b][j])
    model.Minimize(cp_model.LinearExpr.WeightedSum(variables, coeffs))
    hints = None
    if hint is not None:
        hints = [(x[p][j], int(j == hint[p])) for p in range(len(x)) for j in range(len(x[p]))]
    result = solve_cpsat(model, time_limit=time_limit, seed=seed, workers=workers, lp_heavy=lp_heavy,
                         hint=hints)
    stats = cpsat_stats(model, result)
    stats.update(scale=scale.factor * denominator, x_variables=sum(len(r) for r in x), y_variables=n_y,
                 folded_pair_tables=lm.folded)
    terms = 0 if scale.exact else len(x) + len(lm.pairs)  # rounded weights a plan pays: one per pool and pair table
    bound = None if result.bound is None else (result.bound - 0.5 * terms) / scale.factor / denominator
    if result.objective is None:
        return None, result.status, None, bound, stats
    objective = result.objective / scale.factor / denominator
    if terms:
        stats["objective_tolerance"] = scale.tolerance(terms, objective, floor=1e-6)
    choice = [next(j for j in range(len(row)) if result.value(row[j])) for row in x]
    return choice, result.status, objective, bound, stats


def solve_milp_gloria(graph: CandidateGraph, *, time_limit: float | None, seed: int, backend: str = "highs"):
    """(choice or None, status, objective, bound, stats) from the MILP (PuLP model, chosen backend)."""
    lm, denominator = integral_weights(label_model(graph))
    prob = pulp.LpProblem("gloria", pulp.LpMinimize)
    x = [[prob.add_variable(f"x_{p}_{j}", cat="Binary") for j in range(len(row))] for p, row in enumerate(lm.unary)]
    objective = []
    n_constraints = 0
    for p, row in enumerate(lm.unary):
        prob += pulp.lpSum(x[p]) == 1, f"one_{p}"
        n_constraints += 1
        objective += [w * x[p][j] for j, w in enumerate(row) if w]
    n_y = 0
    for (a, b), table in lm.pairs.items():
        out: dict[int, list] = {}
        inc: dict[int, list] = {}
        for (i, j), w in table.items():
            y = prob.add_variable(f"y_{a}_{b}_{i}_{j}", cat="Binary")
            n_y += 1
            out.setdefault(i, []).append(y)
            inc.setdefault(j, []).append(y)
            if w:
                objective.append(w * y)
        for i in range(len(lm.unary[a])):
            prob += pulp.lpSum(out.get(i, [])) == x[a][i], f"out_{a}_{b}_{i}"
        for j in range(len(lm.unary[b])):
            prob += pulp.lpSum(inc.get(j, [])) == x[b][j], f"in_{a}_{b}_{j}"
        n_constraints += len(lm.unary[a]) + len(lm.unary[b])
    prob += pulp.lpSum(objective)
    result = solve_milp(prob, backend=backend, time_limit=time_limit, seed=seed)
    stats = {"backend": backend, "x_variables": sum(len(r) for r in x), "y_variables": n_y,
             "constraints": n_constraints, "folded_pair_tables": lm.folded,
             "solver_wall_time": result.wall_time}
    if denominator != 1:
        stats["scale"] = denominator
    bound = None if result.bound is None else result.bound / denominator
    if result.objective is None or result.status not in ("optimal", "feasible"):
        return None, result.status, None, bound, stats
    choice = [max(range(len(row)), key=lambda j, row=row: result.value(row[j])) for row in x]
    return choice, result.status, result.objective / denominator, bound, stats
