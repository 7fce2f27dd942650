"""CP-SAT and MILP models of Sharon's sharing-plan problem.

Two models, each written once as a small linear 0-1 program (:class:`LinearModel`) and handed to
CP-SAT (integer-scaled) or to a MILP backend through PuLP (:func:`cepopt.formulations.milp.solve_milp`).

1. **MWIS** of a Sharon graph (Lemma 1, Def. 11): one binary x_v per vertex, maximise sum w_v x_v.
   Conflict edges are stated as *clique* constraints: every cell (query, position) is covered by a
   clique of candidates, and the cliques' pairs are exactly the edges (spec §3.1), so
   sum_{v covers cell} x_v <= 1 per maximal cell set. This is stronger than edge constraints and
   needs no edge list.

2. **Compact** model (ours): the expanded problem without enumerating options. Eq. 7 makes
   BValue(p, Q') = sum_{q in Q'} gain(p, q) - fixed(p), with gain = NonShared(q) - Shared(p, q) and
   fixed = Rate(E_m) * Rate(p). Variables x[p,q] (q shares p) and y[p] (p is shared at all):

       max  sum_{p,q} gain(p,q) x[p,q] - fixed(p) y[p]
       s.t. sum_{(p,q) covers (q,pos)} x[p,q] <= 1      per query and position (a clique)
            x[p,q] <= y[p],   sum_q x[p,q] >= 2 y[p]

   A pattern has one shared instance, so y[p] charges fixed(p) once. Which x[p,q] are free is the
   option set: with ``subsets="cause"`` (Alg. 5) only the conflict-causing queries Q_cause(p) may be
   dropped (x[p,q] = y[p] otherwise) and only beneficial candidates take part; the optimum then equals
   the MWIS of the fully expanded graph (two disjoint options of one pattern are never better than
   their union, which is itself an option). With ``subsets="all"`` every x is free and every sharable
   pattern takes part: the true optimum over per-query sharing decisions. With ``expand=False`` no x is
   free: the MWIS of the original graph.

CP-SAT needs integer coefficients: they are multiplied by ``scale`` (1 when they are already integers)
and rounded; the scale and the resulting objective tolerance are reported.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

__all__ = ["LinearModel", "mwis_model", "compact_model", "solve_cpsat_model", "solve_milp_model",
           "integer_scale"]


@dataclass
class LinearModel:
    """A 0-1 program: maximise sum obj[v] x_v subject to rows sum coef x <= rhs."""

    names: list[str]
    objective: list[float]
    rows: list[tuple[dict[int, int], int]] = field(default_factory=list)  # (coefs, rhs) meaning <=
    decode: object = None  # model-specific data for turning a 0-1 vector into a plan

    def add_le(self, coefs: dict[int, int], rhs: int) -> None:
        self.rows.append((coefs, rhs))

    def value(self, x: Sequence[int]) -> float:
        return sum(c for c, xi in zip(self.objective, x, strict=True) if xi)


def _maximal(sets: Iterable[frozenset[int]]) -> list[frozenset[int]]:
    uniq = {s for s in sets if len(s) > 1}
    return [s for s in uniq if not any(s < t for t in uniq)]


def mwis_model(graph) -> LinearModel:
    """MWIS of a :class:`~cepopt.sharon.graph.SharonGraph` with cell-clique constraints."""
    model = LinearModel([f"x{i}" for i in range(len(graph))], [v.weight for v in graph.vertices])
    for clique in graph.cliques():
        model.add_le({i: 1 for i in clique}, 1)
    model.decode = ("mwis", None)
    return model


def compact_model(problem) -> LinearModel:
    """The compact x[p,q] / y[p] model of a :class:`~cepopt.sharon.problem.SharonProblem` (see above).

    Decode data: list of (pattern, cls, {query: variable index}) per pattern.
    """
    from cepopt.sharon.expansion import causing_queries

    original = problem.original
    entries = []  # (vertex, free queries)
    if problem.expand and problem.subsets == "all":
        entries = [(v, v.queries) for v in list(original.vertices) + list(problem.non_beneficial)]
    elif problem.expand:
        entries = [(v, causing_queries(original, i)) for i, v in enumerate(original.vertices)]
    else:
        entries = [(v, frozenset()) for v in original.vertices]
    for v, free in entries:
        if free and v.pattern in problem.injected:
            from cepopt.errors import CepoptError

            raise CepoptError(f"params.weights: {','.join(v.pattern)} has an injected weight for its full "
                              "query set only; the compact model needs rates (build with expand=false)")
    names: list[str] = []
    objective: list[float] = []
    rows: list[tuple[dict[int, int], int]] = []
    decode = []
    cover: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))  # q -> pos -> vars
    cost = problem.cost
    for k, (v, free) in enumerate(entries):
        y = len(names)
        names.append(f"y{k}")
        fixed_qs = v.queries - free
        if not free:
            objective.append(v.weight)
        else:
            objective.append(sum(cost.gain(q, problem.starts[q][v.pattern], len(v.pattern)) for q in fixed_qs)
                             - cost.fixed(v.pattern))
        var_of = {}
        xs = []
        for q in sorted(v.queries):
            if q in free:
                x = len(names)
                names.append(f"x{k}_{len(xs)}")
                objective.append(cost.gain(q, problem.starts[q][v.pattern], len(v.pattern)))
                rows.append(({x: 1, y: -1}, 0))  # x <= y
                xs.append(x)
            else:
                x = y
            var_of[q] = x
            s = problem.starts[q][v.pattern]
            for pos in range(s, s + len(v.pattern)):
                cover[q][pos].add(x)
        if xs:
            # sum_q x[p,q] >= 2 y[p]   <=>   (2 - |fixed|) y - sum x <= 0
            coefs = {x: -1 for x in xs}
            coefs[y] = 2 - len(fixed_qs)
            rows.append((coefs, 0))
        decode.append((v.pattern, var_of, y))
    for by_pos in cover.values():
        for s in _maximal(frozenset(vs) for vs in by_pos.values()):
            rows.append(({i: 1 for i in s}, 1))
    model = LinearModel(names, objective, rows)
    model.decode = ("compact", decode)
    return model


def integer_scale(values: Sequence[float], target: float = 1e12) -> int:
    """1 if every value is an integer (exact), else the power of 10 that puts the largest near target."""
    if all(isinstance(v, int | Fraction) and Fraction(v).denominator == 1 or
           (isinstance(v, float) and v.is_integer()) for v in values):
        return 1
    largest = max((abs(float(v)) for v in values), default=1.0) or 1.0
    return 10 ** max(0, min(12, int(math.floor(math.log10(target / largest)))))


def _objective_tolerance(model: LinearModel, scale: int, objective: float) -> float:
    if scale == 1 and all(float(c).is_integer() for c in model.objective):
        return 1e-9
    err = 0.5 * len(model.objective) / scale
    return max(1e-9, 2 * err / max(abs(objective), 1.0))


def solve_cpsat_model(model: LinearModel, *, time_limit, seed, hint: Sequence[int] | None = None,
                      lp_heavy: bool = False, workers: int = 2, presolve: bool = True):
    """Solve with CP-SAT. Returns (0-1 vector or None, status, solver objective, bound, stats).

    ``presolve=False`` sets ``cp_model_presolve=false``: on these models CP-SAT's presolve spends
    more time than the search (measured: 1.2 of 1.8 s at 200 queries, 13 of 30 s at 1000) and
    removes little, so the Sharon methods turn it off."""
    from ortools.sat.python import cp_model

    from cepopt.formulations.cpsat import cpsat_stats, solve_cpsat

    if not model.names:
        return [], "optimal", 0, 0, {"variables": 0, "constraints": 0, "weight_scale": 1}
    scale = integer_scale(model.objective)
    m = cp_model.CpModel()
    xs = [m.NewBoolVar(n) for n in model.names]
    for coefs, rhs in model.rows:
        # cliques as native at-most-one; x <= y stays LINEAR: as an implication (bool_and) it does not
        # reach the LP relaxation when presolve is off, and the fixed-charge model then stalls
        if rhs == 1 and all(c == 1 for c in coefs.values()):
            m.AddAtMostOne([xs[i] for i in coefs])
        else:
            m.Add(sum(c * xs[i] for i, c in coefs.items()) <= rhs)
    ints = [int(round(float(c) * scale)) if scale != 1 else int(c) for c in model.objective]
    m.Maximize(sum(c * x for c, x in zip(ints, xs, strict=True) if c))
    res = solve_cpsat(m, time_limit=time_limit, seed=seed, workers=workers, lp_heavy=lp_heavy,
                      hint=None if hint is None else list(zip(xs, hint, strict=True)),
                      extra=None if presolve else {"cp_model_presolve": False})
    stats = cpsat_stats(m, res)
    stats["weight_scale"] = scale
    if res.objective is None:
        return None, res.status, None, None, stats
    x = [res.solver.Value(v) for v in xs]
    obj = res.objective / scale
    stats["objective_tolerance"] = _objective_tolerance(model, scale, obj)
    bound = None
    if res.bound is not None:
        bound = res.bound / scale + (0.5 * len(ints) / scale if scale != 1 else 0)
    return x, res.status, obj, bound, stats


def solve_milp_model(model: LinearModel, *, backend: str, time_limit, seed, hint=None):
    """Solve with a MILP backend via PuLP. Returns (0-1 vector or None, status, objective, bound, stats)."""
    import pulp

    from cepopt.formulations.milp import solve_milp

    if not model.names:
        return [], "optimal", 0, 0, {"variables": 0, "constraints": 0, "backend": backend}
    prob = pulp.LpProblem("sharon", pulp.LpMaximize)
    xs = [prob.add_variable(n, 0, 1, cat="Binary") for n in model.names]
    prob += pulp.lpSum(float(c) * x for c, x in zip(model.objective, xs, strict=True) if c)
    for r, (coefs, rhs) in enumerate(model.rows):
        prob += pulp.lpSum(c * xs[i] for i, c in coefs.items()) <= rhs, f"r{r}"
    res = solve_milp(prob, backend=backend, time_limit=time_limit, seed=seed)
    stats = {"variables": len(xs), "constraints": len(model.rows), "backend": backend,
             "solver_wall_time": res.wall_time, "objective_tolerance": 1e-6}
    if res.status not in ("optimal", "feasible"):
        return None, res.status, None, res.bound, stats
    x = [1 if res.values.get(n, 0.0) > 0.5 else 0 for n in model.names]
    obj = res.objective if res.objective is not None else model.value(x)
    return x, res.status, obj, res.bound, stats


def decode_compact(model: LinearModel, x: Sequence[int]) -> list[tuple[tuple[str, ...], frozenset[str]]]:
    """(pattern, queries) entries of a compact-model solution."""
    out = []
    for pattern, var_of, y in model.decode[1]:
        if x[y]:
            qs = frozenset(q for q, i in var_of.items() if x[i])
            out.append((pattern, qs))
    return out
