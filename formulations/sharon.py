"""CP-SAT and MILP models of Sharon's sharing-plan problem.

Two models, each written once as a small linear 0-1 program (:class:`LinearModel`) and handed to
CP-SAT (integer-scaled) or to a MILP backend (:func:`cepopt.formulations.milp.solve_milp`, matrix form).

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

CP-SAT needs integer coefficients: they are multiplied by ``scale`` (1 when they are already integers
that fit; below 1 for weights beyond 64-bit integers, :func:`~cepopt.formulations.scaling.integer_scale`)
and rounded; the scale and the resulting objective tolerance are reported.

Solving (decisions measured on the sharon-optimizers instances, 200-1000 queries):

* The MWIS methods first run an LP branch-and-bound (:mod:`cepopt.formulations.clique_bnb`, on
  maximal cliques); it proves every measured instance by itself, and an unclosed tree hands its
  incumbent to the models below (``lp_nodes`` in :mod:`cepopt.sharon.methods`).
* Both models are solved block by block (:mod:`cepopt.formulations.blocks`, exact); tiny blocks are
  enumerated. The generated workloads mostly form one large block plus a few isolated candidates, so
  this mainly guards against workloads of unrelated query groups.
* The models are written into CP-SAT's proto and MathOpt's ModelProto from flat lists: the Python
  expression layers (CpModel.Add, PuLP, MathOpt expressions) cost up to 2 s per solve at 500 queries.
* MWIS cliques can be grown to maximal cliques (``extend``): the LP bound tightens by half. CP-SAT
  does not gain from it (CPU s, stress 500: 4.4 -> 5.0, 1.7 -> 1.8; default 500: 1.15 -> 1.08), so
  the cpsat method leaves it off; SCIP with its cutting planes off gains up to 3x, so the milp method
  turns it on (:data:`cepopt.sharon.methods.MILP_EXTEND_CLIQUES`).
* The solvers' generic cuts (CP-SAT's CG/MIR/zero-half, SCIP's separation rounds) cost more than they
  save on the clique LP: the MWIS methods turn them off (:data:`MWIS_CPSAT_NO_CUTS`,
  :data:`MWIS_SCIP_NO_CUTS`; option ``cuts=true`` restores them).
* Not adopted: reduced-cost fixing from the LP dual with the GWMIN incumbent fixed no vertex (stress
  500: the LP is degenerate and GWMIN 11 % below the optimum); simplicial / neighbourhood-weight
  reductions apply to 0-2 of ~1000 vertices; CP-SAT's core-based search and presolve (MWIS) were slower.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cepopt.formulations.blocks import solve_by_blocks

if TYPE_CHECKING:
    from cepopt.formulations.scaling import IntScale

__all__ = ["LinearModel", "mwis_model", "extended_cliques", "compact_model", "solve_cpsat_model", "solve_milp_model",
           "COMPACT_HIGHS_OPTIONS", "MWIS_CPSAT_NO_CUTS", "MWIS_SCIP_NO_CUTS"]


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


def mwis_model(graph, extend: bool = False) -> LinearModel:
    """MWIS of a :class:`~cepopt.sharon.graph.SharonGraph` with cell-clique constraints.

    ``extend`` grows every cell clique greedily (heaviest vertex first) by vertices adjacent to all
    its members, which conflict with them in other queries: still valid cliques, a tighter LP
    (measured on stress, 500 queries: LP bound 8656 -> 8224 against the optimum 7696)."""
    cliques = graph.cliques()
    if extend:
        cliques = extended_cliques(graph, cliques)
    model = LinearModel([f"x{i}" for i in range(len(graph))], [v.weight for v in graph.vertices])
    for clique in cliques:
        model.add_le({i: 1 for i in clique}, 1)
    model.decode = ("mwis", None)
    return model


def extended_cliques(graph, cliques: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    """Each clique grown to a maximal clique of ``graph`` (duplicates dropped)."""
    adj = graph.adj
    weight = [v.weight for v in graph.vertices]
    out: dict[tuple[int, ...], None] = {}
    for clique in cliques:
        members = list(clique)
        common = set.intersection(*(adj[i] for i in members)).difference(members)
        while common:
            j = max(common, key=lambda k: (weight[k], -k))
            members.append(j)
            common &= adj[j]
        out[tuple(sorted(members))] = None
    return list(out)


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


def solve_cpsat_model(model: LinearModel, *, time_limit, seed, hint: Sequence[int] | None = None,
                      lp_heavy: bool = False, workers: int = 2, presolve: bool = True, split: bool = True,
                      extra: dict | None = None):
    """Solve with CP-SAT. Returns (0-1 vector or None, status, solver objective, bound, stats).

    ``presolve=False`` sets ``cp_model_presolve=false``: on these models CP-SAT's presolve spends
    more time than the search (measured: 1.2 of 1.8 s at 200 queries, 13 of 30 s at 1000) and
    removes little, so the Sharon methods turn it off. ``split`` solves independent blocks one by one
    (:mod:`cepopt.formulations.blocks`). The model is written straight into CP-SAT's proto (flat
    lists, no per-term Python expressions). ``extra`` are further CP-SAT parameters."""
    if not model.names:
        return [], "optimal", 0, 0, {"variables": 0, "constraints": 0, "weight_scale": 1}
    from cepopt.formulations.scaling import integer_scale

    scale = integer_scale(model.objective)
    params = dict(extra or {})
    if not presolve:
        params["cp_model_presolve"] = False

    def one(sub: LinearModel, left, sub_hint):
        return _cpsat_block(sub, scale, time_limit=left, seed=seed, hint=sub_hint, lp_heavy=lp_heavy,
                            workers=workers, extra=params)

    if split:
        x, status, obj, bound, stats = solve_by_blocks(model, one, time_limit=time_limit, hint=hint)
    else:
        x, status, obj, bound, stats = one(model, time_limit, hint)
    stats.update(variables=len(model.names), constraints=len(model.rows), weight_scale=scale.factor)
    if x is None:
        return None, status, None, None, stats
    stats["objective_tolerance"] = scale.tolerance(len(model.objective), obj)
    return x, status, obj, bound, stats


def _cpsat_block(model: LinearModel, scale: IntScale, *, time_limit, seed, hint, lp_heavy, workers, extra):
    from ortools.sat.python import cp_model

    from cepopt.formulations.cpsat import cpsat_stats, solve_cpsat

    m = cp_model.CpModel()
    proto = m.Proto()
    for name in model.names:
        var = proto.variables.add()
        var.name = name
        var.domain.extend([0, 1])
    for coefs, rhs in model.rows:
        ct = proto.constraints.add()
        # cliques as native at-most-one; x <= y stays LINEAR: as an implication (bool_and) it does not
        # reach the LP relaxation when presolve is off, and the fixed-charge model then stalls
        if rhs == 1 and all(c == 1 for c in coefs.values()):
            ct.at_most_one.literals.extend(list(coefs))
        else:
            ct.linear.vars.extend(list(coefs))
            ct.linear.coeffs.extend([int(c) for c in coefs.values()])
            ct.linear.domain.extend([sum(min(int(c), 0) for c in coefs.values()), int(rhs)])
    ints = [scale.to_int(c) for c in model.objective]
    nz = [i for i, c in enumerate(ints) if c]
    # maximise = minimise the negated objective with scaling factor -1 (as CpModel.maximize writes it)
    proto.objective.vars.extend(nz)
    proto.objective.coeffs.extend([-ints[i] for i in nz])
    proto.objective.scaling_factor = -1.0
    if hint is not None:
        proto.solution_hint.vars.extend(list(range(len(hint))))
        proto.solution_hint.values.extend([int(v) for v in hint])
    res = solve_cpsat(m, time_limit=time_limit, seed=seed, workers=workers, lp_heavy=lp_heavy, extra=extra)
    stats = cpsat_stats(m, res)
    if res.objective is None:
        return None, res.status, None, None, stats
    x = list(res.solver.ResponseProto().solution)
    obj = res.objective / scale.factor
    bound = None
    if res.bound is not None:
        bound = (res.bound + (0 if scale.exact else 0.5 * len(ints))) / scale.factor
    return x, res.status, obj, bound, stats


#: CP-SAT cuts switched off on the MWIS model (the ``cuts`` option of the cpsat method turns them back on).
#: On clique rows these separators mostly rediscover odd-cycle-like rows that cost more LP time than
#: they save in branches. Measured (wall s, default cuts -> these off, 2 runs each, 2 workers): stress
#: 200 queries seed 0 3.6 -> 1.8-2.6, seed 1 1.6-2.4 -> 1.0-1.2; stress 500 seed 0 9.9 -> 6.4, seed 1
#: 0.8 -> 0.6; default 500 seed 2 0.7-1.3 -> 0.3-0.4; stress 1000 seed 0 6.9-7.1 -> 3.1-3.6. Switching
#: off clique cuts as well helped no further. On the compact model the effect was mixed (kept on).
MWIS_CPSAT_NO_CUTS = {"add_cg_cuts": False, "add_mir_cuts": False, "add_zero_half_cuts": False}

#: SCIP without cutting-plane rounds on the MWIS model (the ``cuts`` option of the milp method turns
#: them back on). Measured (wall s, SCIP defaults -> these): default 500 queries seeds 0-2 0.5 / 0.4 /
#: 2.9 -> 0.3 / 0.2 / 0.7; stress 500 25.5 / 6.6 / 1.3 -> 13.5 / 2.8 / 0.9; stress 200 5.2 / 6.0 / 2.5
#: -> 2.0 / 0.7 / 0.35; 1000 queries default 16.0 -> 10.1, stress 10.1 -> 5.2. The cell-clique LP is
#: already the strong relaxation; SCIP's separators spend their rounds on it for little bound.
MWIS_SCIP_NO_CUTS = {"separating/maxrounds": 0, "separating/maxroundsroot": 0}

#: HiGHS settings of the compact model: presolve off. Measured (CPU s, HiGHS presolve on -> off) at
#: 200 / 500 queries: stress 7.6 -> 3.2, 2.0 -> 0.7, 6.6 -> 4.8, 5.0 -> 3.8; default 0.6 -> 0.4,
#: 2.8 -> 2.0, 2.7 -> 1.1. On the MWIS model presolve pays (stress 500: 10.8 with, 19.6 without), so
#: the MWIS methods keep HiGHS's defaults.
COMPACT_HIGHS_OPTIONS = {"presolve": "off"}


def solve_milp_model(model: LinearModel, *, backend: str, time_limit, seed, split: bool = True,
                     options: dict | None = None):
    """Solve with a MILP backend. Returns (0-1 vector or None, status, objective, bound, stats).

    The model goes to :func:`~cepopt.formulations.milp.solve_milp` in matrix form
    (:class:`~cepopt.formulations.milp.MatrixMilp`); ``split`` solves independent blocks one by one.
    ``options`` are solver options (:func:`~cepopt.formulations.milp.solve_milp`)."""
    if not model.names:
        return [], "optimal", 0, 0, {"variables": 0, "constraints": 0, "backend": backend}
    options = dict(options or {})

    def one(sub: LinearModel, left, sub_hint):
        return _milp_block(sub, backend=backend, time_limit=left, seed=seed, options=options)

    if split:
        x, status, obj, bound, stats = solve_by_blocks(model, one, time_limit=time_limit)
    else:
        x, status, obj, bound, stats = one(model, time_limit, None)
    stats.update(variables=len(model.names), constraints=len(model.rows), backend=backend,
                 solver_options=dict(options), objective_tolerance=1e-6)
    return x, status, obj, bound, stats


def _milp_block(model: LinearModel, *, backend, time_limit, seed, options):
    from cepopt.formulations.milp import MatrixMilp, solve_milp

    rows = [(list(coefs), list(coefs.values()), None, rhs) for coefs, rhs in model.rows]
    prob = MatrixMilp(model.names, [float(c) for c in model.objective], rows, name="sharon")
    res = solve_milp(prob, backend=backend, time_limit=time_limit, seed=seed, options=options)
    stats = {"solver_wall_time": res.wall_time}
    if res.message:
        stats["solver_message"] = res.message
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
