"""CP-SAT and MILP models of Sharon's sharing-plan problem.

Two models, each built once as a :class:`~cepopt.formulations.model.Model` (build), solved block by block
by CP-SAT (integer-scaled) or a MILP backend (:func:`solve_sharon_model`), and decoded into the chosen
vertices or (pattern, queries) entries (:func:`decode_mwis`, :func:`decode_compact`).

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

   Three exact reductions keep the model small at scale (issue 22):

   * *Groups of identical queries* (same type sequence and sharing class, :func:`query_groups`) hold the
     same candidates at the same positions with the same gains. One integer x[p,c] in 0..m_c counts the
     copies of group c that share p: rows x[p,c] <= m_c y[p] and sum_{covers cell} x <= m_c. Exact: the
     cell rows of one query are an interval matrix (totally unimodular), so integer counts split into
     m_c packings, one per copy (:func:`decode_compact` does it by interval partitioning); the LP is the
     per-query LP averaged over the copies, so no weaker. Measured: 10,000 stress queries are 2,626
     groups (378,727 -> 99,489 variables), 20,000 default queries 14,729 (512,417 -> 359,361).
   * *Free queries of gain <= 0* are left out unless some optimal plan may need one
     (:func:`_useful_below_zero`): as the second of exactly two queries of a pattern whose other query
     pays for both. (342,033 variables at 20,000 default queries, seed 0.)
   * *Candidates exactly two copies can share* (its fixed queries plus the counts its free x[p,c] may
     take sum to 2) are shared by both copies or by neither: x[p,c] <= m_c y[p] and
     sum x >= (2 - copies) y[p] force x[p,c] = m_c y[p], even in the LP. Their groups are tied to y[p]
     (``tied`` in the decode data: no x, no rows of their own, the gains on y), which removes those
     implied equalities from the LP and lets a rounding of y alone be a plan. Measured at 20,000 default
     queries, seed 1: 12,836 of 31,953 candidates tied, 387,583 -> 364,955 variables, 466,339 ->
     430,884 rows, same root LP bound at ~18 s; HiGHS's randomized rounding then finds a plan 0.03 %
     below the optimum and its node LP the optimum (proven in 28 s instead of 71 s). Without that luck
     HiGHS waits at the root for its analytic centre (an interior-point solve it cannot be told to skip;
     45 s of CPU at this size with or without the tie, 24 s at 10,000 default queries): that wait is
     what the unproven scale points in experiments/README.md have in common. A candidate fewer than two
     copies can share gets y[p] <= 0.

CP-SAT needs integer coefficients: they are multiplied by ``scale`` (1 when they are already integers
that fit; below 1 for weights beyond 64-bit integers, :func:`~cepopt.formulations.scaling.integer_scale`)
and rounded; the scale is reported, and a proof made on rounded weights counts only where it carries
over to the exact ones (:func:`~cepopt.formulations.model.certify`).

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

from cepopt.clock import now
from cepopt.formulations import model as container
from cepopt.formulations.blocks import solve_by_blocks
from cepopt.formulations.export import export_now
from cepopt.formulations.linear import Model, ModelResult

__all__ = ["COMPACT_HIGHS_OPTIONS", "BuildTimeout", "MWIS_CPSAT_NO_CUTS", "MWIS_SCIP_NO_CUTS", "compact_model",
           "decode_compact", "decode_mwis", "extended_cliques", "mwis_model", "query_groups",
           "solve_sharon_model"]


def _maximal(sets: Iterable[frozenset[int]]) -> list[frozenset[int]]:
    uniq = {s for s in sets if len(s) > 1}
    return [s for s in uniq if not any(s < t for t in uniq)]


def mwis_model(graph, extend: bool = False) -> Model:
    """MWIS of a :class:`~cepopt.sharon.graph.SharonGraph` with cell-clique constraints: x_i = vertex i.

    ``extend`` grows every cell clique greedily (heaviest vertex first) by vertices adjacent to all
    its members, which conflict with them in other queries: still valid cliques, a tighter LP
    (measured on stress, 500 queries: LP bound 8656 -> 8224 against the optimum 7696)."""
    cliques = graph.cliques()
    if extend:
        cliques = extended_cliques(graph, cliques)
    model = Model("sharon_mwis", "max")
    model.add_vars([f"x{i}" for i in range(len(graph))], obj=[v.weight for v in graph.vertices])
    for clique in cliques:
        model.add_row(list(clique), [1] * len(clique), None, 1)
    model.decode = ("mwis", None)
    return model


def decode_mwis(x: Sequence) -> list[int]:
    """The chosen vertices of an MWIS-model solution."""
    return [i for i, xi in enumerate(x) if xi]


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


def _compact_entries(problem, only: frozenset[str] | None = None) -> list:
    """(vertex, the queries it may drop) per candidate the compact model gets; with ``only``, the droppable
    queries among ``only`` (Alg. 5's causing queries are found there alone: one query per group of
    identical queries decides for its group)."""
    from cepopt.errors import CepoptError
    from cepopt.sharon.expansion import causing_all

    original = problem.original
    if problem.expand and problem.subsets == "all":
        entries = [(v, v.queries) for v in list(original.vertices) + list(problem.non_beneficial)]
    elif problem.expand:
        entries = list(zip(original.vertices, causing_all(original, only), strict=True))
    else:
        entries = [(v, frozenset()) for v in original.vertices]
    for v, free in entries:
        if free and v.pattern in problem.injected:
            raise CepoptError(f"params.weights: {','.join(v.pattern)} has an injected weight for its full "
                              "query set only; the compact model needs rates (build with expand=false)")
    return entries


#: candidates (and queries) between two checks of the deadline while the compact model is built
DEADLINE_CHECK = 512


class BuildTimeout(Exception):
    """The deadline passed while a model was being built (the caller falls back to its best plan)."""


def _check(deadline: float | None, k: int) -> None:
    if deadline is not None and k % DEADLINE_CHECK == 0 and now() >= deadline:
        raise BuildTimeout


def _useful_below_zero(gains, free, copies: int, fixed_gains, fixed):
    """Which free queries of gain <= 0 the model keeps for a pattern (exact). Some optimal plan shares p
    in such a query q only when p has exactly two queries, q and one other (dropping q from three or
    more leaves p shared and loses gain(q) <= 0; a pattern of BValue <= 0 can be unshared, which loses
    nothing): with no fixed queries, the other is a free one of gain at most the best free gain; with one
    fixed query (``copies`` = 1), it is that one (``fixed_gains``: its gain). Returns a test of a gain."""
    if copies >= 2:
        return lambda g: False
    if copies == 1:
        return lambda g: fixed_gains + g - fixed > 0
    best = max((g for g, f in zip(gains, free, strict=True) if f), default=0)
    return lambda g: best + g - fixed > 0


def query_groups(problem) -> tuple[dict[str, int], list[list[str]]]:
    """Queries with the same type sequence and sharing class, grouped: (group of each query, members of
    each group in query order). Identical queries hold the same candidates at the same positions, with the
    same gains, and the same cells are contested in them."""
    group_of: dict[str, int] = {}
    members: list[list[str]] = []
    index: dict[tuple, int] = {}
    for q, seq in problem.types.items():
        g = index.setdefault((problem.classes[q], seq), len(members))
        if g == len(members):
            members.append([])
        members[g].append(q)
        group_of[q] = g
    return group_of, members


def compact_model(problem, deadline: float | None = None) -> Model:
    """The compact model of a :class:`~cepopt.sharon.problem.SharonProblem` (see above), over groups of
    identical queries: x[p,c] in 0..m_c counts the copies of group c (m_c queries) that share p.

    Decode data (``model.decode``): ("compact", [(pattern, {group: variable index}, y index) per
    candidate], members of each group, the problem's start table, {candidate: {tied group: gain per
    copy}}; a tied group's variable is y). ``deadline`` (``now()``):
    raise :class:`BuildTimeout` once it passes (the build takes seconds at 10,000 queries, so a time limit
    must be able to stop it).
    """
    model = Model("sharon_compact", "max")
    names, objective, rows = model.names, model.objective, model.rows
    ub: list[int] = []
    coef: list[int] = []  # a variable's coefficient in its group's cell rows (0: the group's size)
    decode = []
    tied: dict[int, dict[int, int]] = {}  # candidate -> its free groups tied to y (gain per copy)
    group_of, members = query_groups(problem)
    size = [len(m) for m in members]
    cover: dict[int, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))  # group -> pos -> vars
    cost, starts = problem.cost, problem.starts
    for k, (v, free) in enumerate(_compact_entries(problem, frozenset(m[0] for m in members))):
        _check(deadline, k)
        y = len(names)
        names.append(f"y{k}")
        ub.append(1)
        coef.append(0)
        n = len(v.pattern)
        groups = sorted({group_of[q] for q in v.queries})
        placed = [(members[c][0], starts[members[c][0]][v.pattern]) for c in groups]
        var_of, xs = {}, []
        if not free:
            objective.append(v.weight)
            var_of = dict.fromkeys(groups, y)
        else:
            fixed = cost.fixed(v.pattern)
            objective.append(-fixed)
            gains = cost.gains(n, placed)
            copies = 0  # queries that share p whenever p is shared (not free to drop)
            for c, (q, _), g in zip(groups, placed, gains, strict=True):
                if q not in free:
                    objective[y] += size[c] * g
                    copies += size[c]
            useful = _useful_below_zero(gains, [q in free for q, _ in placed], copies, objective[y] + fixed, fixed) \
                if min(gains, default=1) <= 0 else None
            # a query of gain <= 0 shares p only as its second query: one copy
            kept = {c: (g, size[c] if g > 0 else 1) for c, (q, _), g in zip(groups, placed, gains, strict=True)
                    if q in free and (g > 0 or useful(g))}  # then every copy of q is free: same cells, same contests
            reach = copies + sum(top for _, top in kept.values())
            if reach < 2:  # fewer than two copies can ever share p: y = 0 in every solution
                ub[y], kept = 0, {}
            elif reach == 2 and all(top == size[c] for c, (_, top) in kept.items()):
                # exactly two copies can share p: x[p,c] = m_c y[p] in every solution (even of the LP)
                for c, (g, _) in kept.items():
                    objective[y] += size[c] * g
                    var_of[c] = y
                tied[k] = {c: g for c, (g, _) in kept.items()}
                kept = {}
            for c, (q, _) in zip(groups, placed, strict=True):
                if c in kept:
                    g, top = kept[c]
                    x = len(names)
                    names.append(f"x{k}_{len(xs)}")
                    objective.append(g)
                    ub.append(top)
                    coef.append(1)
                    rows.append(([y, x], [-top, 1], None, 0))  # x <= m_c y
                    xs.append(x)
                    var_of[c] = x
                elif q not in free:
                    var_of[c] = y
            # sum x[p,c] + copies y >= 2 y   <=>   (2 - copies) y - sum x <= 0
            if xs:
                rows.append(([y, *xs], [2 - copies] + [-1] * len(xs), None, 0))
        for c, (_, s) in zip(groups, placed, strict=True):
            x = var_of.get(c)
            if x is None:  # a free query of gain <= 0 the model leaves out
                continue
            by_pos = cover[c]
            for pos in range(s, s + n):
                by_pos[pos].append(x)
        decode.append((v.pattern, var_of, y))
    for k, (c, by_pos) in enumerate(cover.items()):
        _check(deadline, k)
        m = size[c]
        for clique in _maximal(frozenset(vs) for vs in by_pos.values()):
            cols = sorted(clique)
            rows.append((cols, [coef[i] or m for i in cols], None, m))
    n = len(names)
    model.lb, model.ub, model.integer = [0] * n, ub, [True] * n
    model.decode = ("compact", decode, members, starts, tied)
    return model


def decode_compact(model: Model, x: Sequence) -> list[tuple[tuple[str, ...], frozenset[str]]]:
    """(pattern, queries) entries of a compact-model solution. A group's counts go to its copies by
    interval partitioning (intervals by start, each to the first copies free there): a cell's count is at
    most the group's size, so there are always enough (the integer decomposition of interval packings)."""
    _, entries, members, starts, _ = model.decode
    by_group: dict[int, list[tuple[int, int, int, int]]] = defaultdict(list)  # (start, end, entry, count)
    shared: dict[int, list[str]] = {}
    for k, (pattern, var_of, y) in enumerate(entries):
        if not round(x[y]):
            continue
        shared[k] = []
        for c, i in var_of.items():
            count = len(members[c]) if i == y else round(x[i])
            if count:
                s = starts[members[c][0]][pattern]
                by_group[c].append((s, s + len(pattern), k, count))
    for c, intervals in by_group.items():
        free_from = [0] * len(members[c])  # per copy: the first position not yet covered
        for s, e, k, count in sorted(intervals):
            copies = [j for j, f in enumerate(free_from) if f <= s][:count]
            if len(copies) < count:
                raise ValueError(f"compact solution covers a cell of group {c} more than {len(members[c])} times")
            for j in copies:
                free_from[j] = e
                shared[k].append(members[c][j])
    return [(entries[k][0], frozenset(qs)) for k, qs in shared.items()]


def solve_sharon_model(model: Model, backend: str, *, time_limit=None, seed: int = 0, split: bool = True,
                       workers: int = 2, lp_heavy: bool = False, presolve: bool = True,
                       options: dict | None = None, deadline: float | None = None) -> ModelResult:
    """Solve a Sharon model (its hint as start) with ``backend`` ("cpsat" or a MILP backend), block by
    block when ``split`` (:mod:`cepopt.formulations.blocks`); the whole model is what ``--export`` writes.

    CP-SAT: ``presolve=False`` sets ``cp_model_presolve=false``: on these models CP-SAT's presolve spends
    more time than the search (measured: 1.2 of 1.8 s at 200 queries, 13 of 30 s at 1000) and removes
    little, so the Sharon methods turn it off; ``options`` are further CP-SAT parameters. MILP:
    ``options`` are the solver's own (:func:`~cepopt.formulations.milp.solve_model_milp`)."""
    export_now(model, backend)
    if not model.names:
        return ModelResult("optimal", 0, 0, [], backend=backend, exact=True,
                           stats={"variables": 0, "constraints": 0})
    options = dict(options or {})
    if backend == "cpsat" and not presolve:
        options["cp_model_presolve"] = False
    if deadline is None and time_limit is not None:
        deadline = now() + time_limit

    def one(sub: Model, left) -> ModelResult:
        return container.solve(sub, backend, time_limit=left, seed=seed, workers=workers, lp_heavy=lp_heavy,
                               threads=1, options=options)

    if split:
        res = solve_by_blocks(model, one, time_limit=None, deadline=deadline)
    else:
        res = one(model, None if deadline is None else max(deadline - now(), 0.01))
    res.backend = backend
    res.stats.update(variables=len(model.names), constraints=len(model.rows), backend=backend)
    if options:
        res.stats["solver_options"] = options
    return res


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
