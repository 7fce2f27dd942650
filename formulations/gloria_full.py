"""Gloria's Def. 2.7 optimum without enumerating any pool's options: the full-space model.

The candidate-graph models (:mod:`cepopt.formulations.gloria`) pick one option per pool; over every set
partition of each pool's queries that is a Bell number of options (spec §7.2, "exhaustive") and out of
reach beyond about seven queries per pool. This model encodes the partition itself (spec §7.2,
"full-space alternative"), one component of the pool graph at a time (pools of different sharing
classes never interact), with the cost read off cost.py's formulas term by term:

Variables (all 0/1), for every SEQ pool p = (Ei, Ej) and query q of p:

* ``m[p,q,X]``: q is shared in p with snapshot type X (X admissible for q: Ei, or an upstream type of q
  other than Ej; only Ei for a query that starts at Ei); none set = q unshared;
* ``s[p,q,q']``: q and q' are in one block (an equivalence relation: transitive, same mode, blocks of
  shared queries hold at least two queries). The relation itself has no block labels, so no label
  symmetry to break;
* ``l[p,Q,q,X]``: q leads a block of mode X among the queries Q of one edge of p's fan-out (the block's
  first query in Q): ``l >= m[p,q,X] - sum_{q' in Q, q' < q} s[p,q',q]``;
* ``r[e,q,X]``: q's block is REUSEd across pair term e (no evaluation there).

A Kleene super-pool K has one 0/1 per option (all unshared, or all shared with X) and aliases ``m[K,q,X]``
to the option X and ``s[K,q,q']`` to "shared".

Cost (cost.py), the constant start edges aside, per SEQ pool p and edge s of its fan-out (the pair terms
leaving p, its end edge):

* an unshared query pays ``f(Ei) f(Ej)`` times its share of the edge (1 per edge under
  ``fork_accounting="edge"``; split over its edges, 1 in all, under "once");
* a shared block of mode X pays its propagation ``f(Ei) len(X, Ei) g(Ej)`` per edge it touches ("edge":
  a sum of leaders per edge) or once in all ("once": its shares over the fan-out sum to 1, so a sum of
  leaders over the pool);
* a shared query of mode X pays the evaluation ``f(Ej) f(X)`` on every edge where it is not REUSEd.

A Kleene super-pool's terms (cycle weight, end edges, the propagation on its out-terms) depend on its
option only. Derivability (§4.1, cost.pair_derivable) along a term's primary queries P: an inherited
mode X != Ej in the next pool comes from the previous one (``m[b,q,X] <= m[a,q,X]``), a block is never
split (``s[b,q,q'] >= s[a,q,q']`` on P) and an inherited block is exactly the restricted previous block.
REUSE (cost.pair_cost: the next block has the same X, contains the restricted block and lies inside the
previous block) is ``r = m[b,q,X]`` for a primary query whose restricted block holds primary queries
only, and linear conditions on s otherwise.

Weights are exact (ints, or Fractions under "once"); both backends take them times the least common
multiple of their denominators, so with integer frequencies the solvers work in exact integers and a
proof is a proof. Float frequencies are rounded for CP-SAT and the result is then never "optimal".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations

from cepopt.clock import now
from cepopt.errors import MethodLimitError
from cepopt.formulations.model import Model
from cepopt.gloria import cost
from cepopt.gloria.cost import Option, cycle_cost, end_cost, flen
from cepopt.gloria.graph import BuildTimeout
from cepopt.gloria.greedy import greedy as greedy_options
from cepopt.gloria.nodes import generate
from cepopt.gloria.plan import Block, sort_blocks
from cepopt.gloria.problem import GloriaProblem, PairTerm, Pool
from cepopt.solution import MethodResult

__all__ = ["FullModel", "Prep", "build_full_model", "components", "decode_full", "full_hint", "model_value",
           "prepare", "repair", "solve_full", "start_options"]


class _Lin(Model):
    """The container (:class:`~cepopt.formulations.model.Model`, minimised) with the few builders this
    model uses: a 0/1 variable with a cost, a cost added to a variable, a row from (variable, coef)
    pairs (repeated variables merged)."""

    def __init__(self) -> None:
        super().__init__("gloria-full", sense="min")

    def bvar(self, name: str, cost=0) -> int:
        return self.add_var(name, 0, 1, True, cost)

    def cost(self, v: int, c) -> None:
        if c:
            self.objective[v] += c

    def addt(self, terms: list[tuple[int, int]], lo: int | None = None, hi: int | None = None) -> None:
        cols = [v for v, _ in terms]
        if len(set(cols)) == len(cols):
            self.rows.append((cols, [c for _, c in terms], lo, hi))
            return
        merged: dict[int, int] = {}
        for v, c in terms:
            merged[v] = merged.get(v, 0) + c
        cols = [v for v, c in merged.items() if c]
        self.rows.append((cols, [merged[v] for v in cols], lo, hi))


@dataclass
class FullModel:
    """The model of one component of the pool graph (``pools``), with its variable maps."""

    problem: GloriaProblem
    pools: list[int]
    lin: _Lin = field(default_factory=_Lin)
    constant: object = 0
    order: dict[int, list[str]] = field(default_factory=dict)
    mode: dict[tuple[int, str], dict[str, int]] = field(default_factory=dict)
    same: dict[tuple[int, str, str], int] = field(default_factory=dict)
    #: (pool, q, q2) -> {X: 1 when q and q2 share a block of mode X}; their sum is ``same``
    same_mode: dict[tuple[int, str, str], dict[str, int]] = field(default_factory=dict)
    kopt: dict[int, dict[str | None, int]] = field(default_factory=dict)
    kshared: dict[int, int] = field(default_factory=dict)
    #: (term index, query) -> {X: var} of the reuse indicators that are their own variables
    reuse: dict[tuple[int, str], dict[str, int]] = field(default_factory=dict)
    leaders: dict[tuple[int, frozenset, str, str], int] = field(default_factory=dict)
    #: the shared preparation (kept pairs, domains) and this component's graphs of kept pairs
    prep: Prep | None = None
    graphs: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)
    cache: dict = field(default_factory=dict, repr=False)

    def m(self, p: int, q: str) -> dict[str, int]:
        return self.mode.get((p, q), {})

    def s_mode(self, p: int, q: str, q2: str) -> dict[str, int]:
        """The variables of "q and q2 share a block of mode X in pool p", per X."""
        if self.problem.pools[p].kind == "kleene":
            return {x: v for x, v in self.kopt.get(p, {}).items() if x is not None}
        key = (p, q, q2) if q < q2 else (p, q2, q)
        return self.same_mode.get(key, {})

    def s(self, p: int, q: str, q2: str) -> int | None:
        """The variable of "q and q2 share a block in pool p" (None: never)."""
        if self.problem.pools[p].kind == "kleene":
            return self.kshared.get(p)
        key = (p, q, q2) if q < q2 else (p, q2, q)
        return self.same.get(key)


def components(problem: GloriaProblem, prep: Prep) -> list[dict[int, frozenset[str]]]:
    """The independent parts of the model: (pool, query) units that have variables (a query of a SEQ pool
    with a snapshot type in its domain; every query of a Kleene super-pool of two or more), joined when
    they interact: two queries of a pool kept as a pair, one query on both sides of a pair term. Each
    part maps its pools to its queries there; smallest first. Everything outside them is unshared in
    every plan the models allow, at a cost that no decision changes."""
    parent: dict[tuple[int, str], tuple[int, str]] = {}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(x, y):
        if x in parent and y in parent:
            parent[find(x)] = find(y)

    for pool in problem.pools:
        if prep.trivial(problem, pool.index):
            continue
        qs = sorted(pool.queries)
        for q in qs:
            if pool.kind == "kleene" or prep.domains[pool.index][q]:
                parent[(pool.index, q)] = (pool.index, q)
        if pool.kind == "kleene":
            for q in qs[1:]:
                union((pool.index, q), (pool.index, qs[0]))
        else:
            for q, q2 in prep.graphs[pool.index].edges:
                union((pool.index, q), (pool.index, q2))
    for term in problem.terms:
        if not term.entry:
            for q in term.queries:
                union((term.a, q), (term.b, q))
    parts: dict[tuple[int, str], dict[int, set[str]]] = {}
    for unit in parent:
        parts.setdefault(find(unit), {}).setdefault(unit[0], set()).add(unit[1])
    out = [{p: frozenset(qs) for p, qs in part.items()} for part in parts.values()]
    return sorted(out, key=lambda part: (sum(map(len, part.values())), sorted(part)))


# ------------------------------------------------------------------------------------------- variables
def _seq_vars(fm: FullModel, pool: Pool) -> None:
    lin = fm.lin
    qs = fm.order[pool.index]
    graph = fm.prep.graphs[pool.index]
    for q in qs:
        fm.mode[(pool.index, q)] = {x: lin.bvar(f"m{pool.index}_{q}_{x}") for x in fm.prep.domains[pool.index][q]}
        if fm.mode[(pool.index, q)]:
            lin.addt([(v, 1) for v in fm.mode[(pool.index, q)].values()], hi=1)
    for q, q2 in graph.subgraph(qs).edges:
        q, q2 = sorted((q, q2))
        common = sorted(set(fm.m(pool.index, q)) & set(fm.m(pool.index, q2)))
        if not common:
            continue
        per_mode = {x: lin.bvar(f"s{pool.index}_{q}_{q2}_{x}") for x in common}
        fm.same_mode[(pool.index, q, q2)] = per_mode
        if len(common) == 1:
            fm.same[(pool.index, q, q2)] = per_mode[common[0]]
        else:
            v = fm.same[(pool.index, q, q2)] = lin.bvar(f"s{pool.index}_{q}_{q2}")
            lin.addt([(v, 1)] + [(w, -1) for w in per_mode.values()], 0, 0)
    fm.graphs[pool.index] = graph


@dataclass
class Prep:
    """What the models of all components share: the SEQ pools that keep every pair, each SEQ pool's
    graph of kept pairs and every query's snapshot types there (pruned to a fixpoint)."""

    dense: set[int]
    graphs: dict[int, object]
    domains: dict[int, dict[str, list[str]]]

    def trivial(self, problem: GloriaProblem, p: int) -> bool:
        """No sharing is possible in pool p (every query unshared in every plan the models allow)."""
        if problem.pools[p].kind == "kleene":
            return len(problem.pools[p].queries) < 2
        return not any(self.domains.get(p, {}).values())


def prepare(problem: GloriaProblem) -> Prep:
    """Kept pairs and snapshot domains of every SEQ pool. A type leaves a query's domain when no kept
    neighbour can share it (a shared block is connected by kept pairs) or when it is inherited (not the
    pool's source) and the query's primary predecessor cannot carry it (derivability, §4.1)."""
    dense = _dense_pools(problem, list(range(len(problem.pools))))
    graphs: dict[int, object] = {}
    domains: dict[int, dict[str, list[str]]] = {}
    for pool in problem.pools:
        if pool.kind != "seq" or len(pool.queries) < 2:
            continue
        graphs[pool.index] = _relevance(problem, pool, pool.index in dense)
        domains[pool.index] = {
            q: [pool.source] if q in pool.start_queries else problem.admissible_snapshots(pool, frozenset({q}))
            for q in sorted(pool.queries)}
    inherited = [(term, q) for term in problem.terms if not term.entry and term.b in domains
                 for q in sorted(term.primary)]
    changed = True
    while changed:
        changed = False
        for p, dom in domains.items():
            changed |= _prune_modes(graphs[p], dom)
        for term, q in inherited:
            ej = problem.pools[term.b].source
            source = _pred_modes(problem, domains, term.a, q)
            dom = domains[term.b]
            keep = [x for x in dom[q] if x == ej or x in source]
            if len(keep) != len(dom[q]):
                dom[q] = keep
                changed = True
    return Prep(dense, graphs, domains)


def _pred_modes(problem: GloriaProblem, domains, a: int, q: str) -> set[str]:
    pool = problem.pools[a]
    if pool.kind == "kleene":
        return set(pool.types) if len(pool.queries) >= 2 else set()
    return set(domains.get(a, {}).get(q, ()))


def _prune_modes(graph, domains: dict[str, list[str]]) -> bool:
    """Drop a snapshot type from a query's domain when no kept neighbour can share it: a shared block is
    connected in the graph of kept pairs (module docstring), so such a block would be a single query."""
    changed, any_change = True, False
    while changed:
        changed = False
        for q, modes in domains.items():
            keep = [x for x in modes if any(x in domains[q2] for q2 in graph[q])]
            if len(keep) != len(modes):
                domains[q] = keep
                changed = any_change = True
    return any_change


def _relevance(problem: GloriaProblem, pool: Pool, dense: bool):
    """The pairs of the pool whose relation the model keeps: a chordal graph (so that transitivity on its
    triangles makes the kept pairs an equivalence relation's restriction, module docstring)."""
    import networkx as nx

    qs = sorted(pool.queries)
    g = nx.Graph()
    g.add_nodes_from(qs)
    if dense:
        g.add_edges_from(combinations(qs, 2))
        return g
    cliques = [term.queries for term in problem.terms if term.b == pool.index]
    cliques += [group for _kind, group, _t in _fanout(problem, pool)]
    for group in cliques:
        g.add_edges_from(combinations(sorted(group), 2))
    _make_chordal(g)
    return g


def _make_chordal(g) -> None:
    """Add fill edges so that ``g`` is chordal: maximum cardinality search gives an order whose
    reverse is a perfect elimination order exactly when ``g`` is chordal; the elimination game along
    it adds what is missing (nothing for a chordal graph, e.g. disjoint or nested cliques)."""
    weight = {v: 0 for v in g}
    order: list = []
    done: set = set()
    buckets: dict[int, set] = {0: set(g)}
    top = 0
    while len(order) < len(weight):
        while not buckets.get(top):
            top -= 1
        v = min(buckets[top])
        buckets[top].discard(v)
        order.append(v)
        done.add(v)
        for u in g[v]:
            if u not in done:
                buckets[weight[u]].discard(u)
                weight[u] += 1
                buckets.setdefault(weight[u], set()).add(u)
                top = max(top, weight[u])
    rank = {v: k for k, v in enumerate(order)}
    for v in reversed(order):  # eliminate v: its earlier neighbours become a clique
        earlier = sorted((u for u in g[v] if rank[u] < rank[v]), key=rank.get)
        if len(earlier) < 2:
            continue
        parent = earlier[-1]
        for u in earlier[:-1]:
            if not g.has_edge(u, parent):
                g.add_edge(u, parent)


def _dense_pools(problem: GloriaProblem, pools: list[int]) -> set[int]:
    """SEQ pools whose relation is kept on every pair: under fork_accounting="once" (a block pays its
    propagation once, so merging blocks that share no edge pays), and around a term whose REUSE is
    checked by the explicit block conditions (a non-primary query; a Kleene pool's snapshot type that
    is the next pool's source) or a query without a primary predecessor that does not start there."""
    inside = set(pools)
    if problem.fork_accounting == "once":
        return {p for p in inside if problem.pools[p].kind == "seq"}
    dense: set[int] = set()
    primary_in: dict[int, set[str]] = {}
    for term in problem.terms:
        if term.a not in inside or term.entry:
            continue
        primary_in.setdefault(term.b, set()).update(term.primary)
        kleene_exit = problem.pools[term.a].kind == "kleene" and term.t[1] in problem.pools[term.a].types
        if term.queries - term.primary or kleene_exit:
            dense.update((term.a, term.b))
    for p in inside:
        pool = problem.pools[p]
        if pool.kind == "seq" and pool.queries - pool.start_queries - primary_in.get(p, set()):
            dense.add(p)
    return {p for p in dense if problem.pools[p].kind == "seq"}


def _kleene_vars(fm: FullModel, pool: Pool) -> None:
    lin = fm.lin
    qs = fm.order[pool.index]
    opts: dict[str | None, int] = {None: lin.bvar(f"k{pool.index}_ns")}
    if len(qs) >= 2:
        for x in sorted(pool.types):
            opts[x] = lin.bvar(f"k{pool.index}_{x}")
        fm.kshared[pool.index] = lin.bvar(f"k{pool.index}_shared")
        lin.addt([(fm.kshared[pool.index], 1)] + [(v, -1) for x, v in opts.items() if x is not None], 0, 0)
        for q in qs:
            fm.mode[(pool.index, q)] = {x: v for x, v in opts.items() if x is not None}
    lin.addt([(v, 1) for v in opts.values()], 1, 1)
    fm.kopt[pool.index] = opts


# -------------------------------------------------------------------------------------- one pool's rows
def _partition_rows(fm: FullModel, pool: Pool) -> None:
    """Same mode within a block, blocks of >= 2 queries, transitivity."""
    p, lin = pool.index, fm.lin
    qs = fm.order[p]
    for q, q2 in combinations(qs, 2):
        per_mode = fm.s_mode(p, q, q2)
        mq, mq2 = fm.m(p, q), fm.m(p, q2)
        for x, v in per_mode.items():  # one block, one mode
            lin.addt([(v, 1), (mq[x], -1)], hi=0)
            lin.addt([(v, 1), (mq2[x], -1)], hi=0)
    graph = fm.graphs.get(p)
    if graph is None:
        return
    for q in qs:
        if not fm.m(p, q):
            continue
        for x, w in fm.m(p, q).items():  # a block of mode x holds another query
            pairs = [fm.s_mode(p, q, q2).get(x) for q2 in graph[q]]
            lin.addt([(v, 1) for v in pairs if v is not None] + [(w, -1)], lo=0)
    n_tri = 0
    rows = lin.rows
    rank = {q: k for k, q in enumerate(qs)}
    for i in qs:
        for j in graph[i]:
            if rank[j] <= rank[i]:
                continue
            for k in graph[i]:
                if rank[k] <= rank[j] or k not in graph[j]:
                    continue
                sij, sjk, sik = fm.s(p, i, j), fm.s(p, j, k), fm.s(p, i, k)
                for a, b, c in ((sij, sjk, sik), (sij, sik, sjk), (sik, sjk, sij)):
                    if a is not None and b is not None:
                        rows.append(([a, b, c], [1, 1, -1], None, 1) if c is not None else ([a, b], [1, 1], None, 1))
                        n_tri += 1
    fm.stats["triangles"] = fm.stats.get("triangles", 0) + n_tri


def _fanout(problem: GloriaProblem, pool: Pool) -> list[tuple[str, frozenset[str], PairTerm | None]]:
    """The edges that price Ej with predecessor Ei from the pool's blocks: (kind, queries, term)."""
    out = [("entry" if term.entry else "pair", term.queries, term) for term in problem.terms if term.a == pool.index]
    out += [("end", ending, None) for _t, ending in pool.ends]
    return out


def _leader(fm: FullModel, p: int, group: frozenset[str], q: str, x: str) -> int:
    """Variable that is 1 when q leads a block of mode x among ``group`` (the first of its block there)."""
    key = (p, group, q, x)
    if key in fm.leaders:
        return fm.leaders[key]
    earlier = [fm.s_mode(p, q2, q).get(x) for q2 in fm.order[p] if q2 < q and q2 in group]
    earlier = [v for v in earlier if v is not None]
    mq = fm.m(p, q)[x]
    if not earlier:
        fm.leaders[key] = mq
        return mq
    v = fm.lin.bvar(f"l{p}_{len(fm.leaders)}")
    fm.lin.addt([(v, 1), (mq, -1)] + [(w, 1) for w in earlier], lo=0)
    fm.leaders[key] = v
    return v


def _count_cuts(fm: FullModel, p: int, group: frozenset[str]) -> None:
    """Valid inequalities on the number N of blocks of mode X among ``group`` (the sum of its leaders).

    In a partition, N = sum over shared q of 1 / (1 + S_q), S_q = q's block mates in the group. 1/(1+S) is
    convex, so on integers it lies above its secant through k and k+1; summed over q:
    ``(1+k)(2+k) N >= 2(1+k) sum_q m_q - sum_q S_q``, tight for a block of k+1 queries. The leader
    definition alone lets the LP count a fraction of a block (the first queries of the order partly
    unshared); these rows make it pay about one block per group."""
    members = [q for q in fm.order[p] if q in group]
    if len(members) < 3:
        return
    for x in sorted({x for q in members for x in fm.m(p, q)}):
        leaders = [fm.leaders[(p, group, q, x)] for q in members if (p, group, q, x) in fm.leaders]
        modes = [fm.m(p, q)[x] for q in members if x in fm.m(p, q)]
        pairs = [v for q, q2 in combinations(members, 2) if (v := fm.s_mode(p, q, q2).get(x)) is not None]
        if len(modes) < 3 or not pairs:
            continue
        k = 1
        while True:
            k = min(k, len(modes) - 1)
            a = (1 + k) * (2 + k)
            fm.lin.addt([(v, a) for v in leaders] + [(v, -2 * (1 + k)) for v in modes] + [(v, 2) for v in pairs],
                       lo=0)
            if k == len(modes) - 1:
                break
            k *= 2


def _seq_costs(fm: FullModel, pool: Pool) -> None:
    problem, lin, p = fm.problem, fm.lin, pool.index
    ei, ej = pool.source, pool.target
    f = problem.freq
    fan = _fanout(problem, pool)
    prop = {x: f[ei] * flen(problem, x, ei) * problem.g(ej) for x in problem.freq}
    for q in fm.order[p]:
        unshared = sum(f[ei] * f[ej] * problem.share(p, (ei, ej), (q,), qs) for _k, qs, _t in fan if q in qs)
        fm.constant += unshared
        for v in fm.m(p, q).values():
            lin.cost(v, -unshared)
    groups: dict[frozenset[str], int] = {}
    if problem.fork_accounting == "once":
        groups[frozenset(pool.queries)] = 1
    else:
        for _k, qs, _t in fan:
            groups[qs] = groups.get(qs, 0) + 1
    for group, times in groups.items():
        for q in fm.order[p]:
            if q in group:
                for x in fm.m(p, q):
                    lin.cost(_leader(fm, p, group, q, x), times * prop[x])
        _count_cuts(fm, p, group)
    for _kind, qs, _t in fan:
        for q in qs:
            for x, v in fm.m(p, q).items():
                lin.cost(v, f[ej] * f[x])


def _kleene_costs(fm: FullModel, pool: Pool) -> None:
    problem, p = fm.problem, pool.index
    f = problem.freq
    out = [term for term in problem.terms if term.a == p]
    for x, v in fm.kopt[p].items():
        blocks: Option = (sort_blocks(Block((q,)) for q in pool.queries) if x is None
                          else (Block(tuple(pool.queries), x),))
        c = cycle_cost(problem, pool, blocks) + end_cost(problem, pool, blocks)
        for term in out:
            ei, ej = term.t
            if x is None:
                c += sum(f[ei] * f[ej] * problem.share(p, term.t, (q,), term.queries) for q in term.queries)
            else:
                c += f[ei] * flen(problem, x, ei) * problem.g(ej) * problem.share(p, term.t, blocks[0].queries,
                                                                                  term.queries)
                c += f[ej] * f[x] * len(term.queries)
        fm.lin.cost(v, c)


# ------------------------------------------------------------------------------------------- term rows
def _derivability(fm: FullModel, term: PairTerm) -> None:
    a, b = term.a, term.b
    lin = fm.lin
    ej = fm.problem.pools[b].source
    prim = sorted(q for q in term.primary if fm.m(b, q) or fm.m(a, q))
    for q in prim:
        ma = fm.m(a, q)
        for x, v in fm.m(b, q).items():
            if x == ej:
                continue
            lin.addt([(v, 1)] + ([(ma[x], -1)] if x in ma else []), hi=0)
    for q, q2 in combinations(prim, 2):
        sa, sb = fm.s(a, q, q2), fm.s(b, q, q2)
        if sa is not None:
            lin.addt([(sa, 1)] + ([(sb, -1)] if sb is not None else []), hi=0)
    pset = set(prim)
    for q in prim:
        inh = {x: v for x, v in fm.m(b, q).items() if x != ej}
        if not inh:
            continue
        for q2 in fm.order[b]:
            if q2 == q:
                continue
            sb = fm.s(b, q, q2)
            if sb is None or not set(inh) & set(fm.m(b, q2)):
                continue
            sa = fm.s(a, q, q2) if q2 in pset else None
            lin.addt([(sb, 1)] + [(v, 1) for v in inh.values()] + ([(sa, -1)] if sa is not None else []), hi=1)


def _reuse(fm: FullModel, index: int, term: PairTerm) -> None:
    """Subtract the evaluation f(Ej) f(X) of every query whose restricted block is REUSEd across the term.

    For a primary query and an inherited mode X != Ej, derivability already makes the next block the
    restricted previous block, so REUSE is that mode (``r = m[b,q,X]``) unless a non-primary query may
    sit in q's block (then it must not). Otherwise (a non-primary query, or X = Ej, possible after a
    Kleene super-pool whose snapshot type is the next pool's source) the block conditions are explicit.
    """
    a, b = term.a, term.b
    f, lin = fm.problem.freq, fm.lin
    ej = term.t[1]
    nonprim = term.queries - term.primary
    qa = fm.problem.pools[a].queries
    for q in sorted(term.queries):
        common = {x: (fm.m(a, q)[x], v) for x, v in fm.m(b, q).items() if x in fm.m(a, q)}
        if not common:
            continue
        others = [q2 for q2 in sorted(nonprim & qa) if q2 != q and fm.s(a, q, q2) is not None]
        derived = {x: vs for x, vs in common.items() if q in term.primary and x != ej}
        if derived and not others:
            for x, (_va, vb) in derived.items():
                lin.cost(vb, -f[ej] * f[x])
            derived = {}
        elif derived:
            rs = _reuse_vars(fm, index, q, ej, derived)
            for q2 in others:
                lin.addt([(r, 1) for r in rs.values()] + [(fm.s(a, q, q2), 1)], hi=1)
        rest = {x: vs for x, vs in common.items() if x not in derived and not (q in term.primary and x != ej)}
        if rest:
            rs = _reuse_vars(fm, index, q, ej, rest)
            _reuse_generic(fm, term, q, [(r, 1) for r in rs.values()])


def _reuse_vars(fm: FullModel, index: int, q: str, ej: str, modes: dict[str, tuple[int, int]]) -> dict[str, int]:
    f, lin = fm.problem.freq, fm.lin
    rs = {x: lin.bvar(f"r{index}_{q}_{x}") for x in modes}
    fm.reuse.setdefault((index, q), {}).update(rs)
    for x, r in rs.items():
        lin.cost(r, -f[ej] * f[x])
        lin.addt([(r, 1), (modes[x][0], -1)], hi=0)
        lin.addt([(r, 1), (modes[x][1], -1)], hi=0)
    return rs


def _reuse_generic(fm: FullModel, term: PairTerm, q: str, rsum: list[tuple[int, int]]) -> None:
    """REUSE of a non-primary query: its next block contains its restricted block and lies inside its block."""
    a, b = term.a, term.b
    lin = fm.lin
    qa, qb = fm.problem.pools[a].queries, fm.problem.pools[b].queries
    for q2 in sorted(term.queries & qa):  # the restricted block lies in the next block
        sa = fm.s(a, q, q2) if q2 != q else None
        if sa is None:
            continue
        sb = fm.s(b, q, q2) if q2 in qb else None
        lin.addt(rsum + [(sa, 1)] + ([(sb, -1)] if sb is not None else []), hi=1)
    for q2 in sorted(qb):  # the next block lies in the previous block
        sb = fm.s(b, q, q2) if q2 != q else None
        if sb is None:
            continue
        sa = fm.s(a, q, q2) if q2 in qa else None
        lin.addt(rsum + [(sb, 1)] + ([(sa, -1)] if sa is not None else []), hi=1)


def build_full_model(problem: GloriaProblem, part: dict[int, frozenset[str]], deadline: float | None = None,
                     prep: Prep | None = None) -> FullModel:
    """The full-space model of one independent part (:func:`components`): its pools, its queries there."""
    fm = FullModel(problem, sorted(part), prep=prep or prepare(problem))
    inside = set(part)
    for p in fm.pools:
        pool = problem.pools[p]
        fm.order[p] = sorted(part[p])
        (_kleene_vars if pool.kind == "kleene" else _seq_vars)(fm, pool)
    for p in fm.pools:
        pool = problem.pools[p]
        if pool.kind == "kleene":
            _kleene_costs(fm, pool)
        else:
            _partition_rows(fm, pool)
            _seq_costs(fm, pool)
        _check(deadline)
    for index, term in enumerate(problem.terms):
        if term.a in inside and not term.entry:
            _derivability(fm, term)
            _reuse(fm, index, term)
    fm.stats.update(variables=len(fm.lin.names), rows=len(fm.lin.rows))
    return fm


def _check(deadline: float | None) -> None:
    from cepopt.gloria.graph import check_deadline

    check_deadline(deadline)


# ------------------------------------------------------------------------------------ decode and hints
def decode_full(fm: FullModel, value) -> dict[int, list[Block]]:
    """The blocks of the part's queries in each of its pools from a solution (``value(var) -> 0/1``)."""
    out: dict[int, Option] = {}
    for p in fm.pools:
        pool = fm.problem.pools[p]
        qs = fm.order[p]
        if pool.kind == "kleene":
            x = next((x for x, v in fm.kopt[p].items() if value(v)), None)
            out[p] = [Block((q,)) for q in qs] if x is None else [Block(tuple(qs), x)]
            continue
        blocks: list[Block] = []
        seen: set[str] = set()
        for q in qs:  # blocks: the connected components of the kept pairs in one block
            if q in seen:
                continue
            x = next((x for x, v in fm.m(p, q).items() if value(v)), None)
            members, stack = [q], [q]
            seen.add(q)
            while x is not None and stack:
                cur = stack.pop()
                for q2 in fm.graphs[p][cur] if p in fm.graphs else ():
                    v = fm.s(p, cur, q2)
                    if q2 not in seen and v is not None and value(v):
                        seen.add(q2)
                        members.append(q2)
                        stack.append(q2)
            blocks.append(Block(tuple(members), x if len(members) > 1 else None))
        out[p] = blocks
    return out


def full_hint(fm: FullModel, options: dict[int, Option] | list[Option]) -> dict[int, int]:
    """Values of the model's variables for a given option per pool (a hint for CP-SAT).

    A block that is not connected by kept pairs is split into its connected pieces, a piece of one
    query left unshared (never dearer under fork_accounting="edge", module docstring); reuse indicators
    that are variables of their own are left at 0 (feasible; the solver sets them)."""
    hint: dict[int, int] = {}
    for p in fm.pools:
        if p in fm.kopt:
            option = options[p]
            x = option[0].snapshot if len(option) == 1 and option[0].snapshot else None
            for y, v in fm.kopt[p].items():
                hint[v] = int(y == x)
            if p in fm.kshared:
                hint[fm.kshared[p]] = int(x is not None)
            continue
        label, mode = _hint_blocks(fm, p, options[p])
        for q in fm.order[p]:
            for x, v in fm.m(p, q).items():
                hint[v] = int(mode.get(q) == x)
        for q, q2 in combinations(fm.order[p], 2):
            v = fm.s(p, q, q2)
            if v is None:
                continue
            together = label.get(q) is not None and label.get(q) == label.get(q2)
            hint[v] = int(together)
            for x, w in fm.s_mode(p, q, q2).items():
                hint[w] = int(together and mode[q] == x)
    for (p, group, q, x), v in fm.leaders.items():
        if v not in hint:
            label, mode = _hint_blocks(fm, p, options[p])
            first = mode.get(q) == x and not any(
                label.get(q2) == label[q] for q2 in fm.order[p] if q2 < q and q2 in group)
            hint[v] = int(first)
    for rs in fm.reuse.values():
        for v in rs.values():
            hint[v] = 0
    return hint


def _hint_blocks(fm: FullModel, p: int, option: Option) -> tuple[dict[str, int], dict[str, str]]:
    """(piece label, mode) of every shared query of pool p under ``option``, pieces as in full_hint."""
    key = (p, option)
    if key not in fm.cache:
        fm.cache[key] = _pieces(fm.prep, p, option)
    return fm.cache[key]


def _pieces(prep: Prep, p: int, option: Option) -> tuple[dict[str, tuple], dict[str, str]]:
    graph = prep.graphs.get(p)
    label: dict[str, tuple] = {}
    mode: dict[str, str] = {}
    for k, blk in enumerate(option):
        if blk.snapshot is None or graph is None:
            continue
        members = [q for q in blk.queries if blk.snapshot in prep.domains[p][q]]
        inside = set(members)
        seen: set[str] = set()
        for q in members:
            if q in seen:
                continue
            piece, stack = [q], [q]
            seen.add(q)
            while stack:
                cur = stack.pop()
                for q2 in graph[cur]:
                    if q2 in inside and q2 not in seen:
                        seen.add(q2)
                        piece.append(q2)
                        stack.append(q2)
            if len(piece) > 1:
                for q2 in piece:
                    label[q2], mode[q2] = (k, q), blk.snapshot
    return label, mode


def repair(problem: GloriaProblem, prep: Prep, options: list[Option]) -> list[Option]:
    """A plan the models allow from any plan: every block cut into its pieces connected by kept pairs
    with a type in every member's domain, a piece of one query unshared (never dearer under
    fork_accounting="edge", module docstring). The input when no cut was needed; the unshared plan if
    the result is not a valid plan."""
    from cepopt.gloria.cost import baseline_options, edge_derivable, option_problem

    out = list(options)
    for p in prep.graphs:
        label, mode = _pieces(prep, p, options[p])
        groups: dict[tuple, list[str]] = {}
        for q in sorted(problem.pools[p].queries):
            groups.setdefault(label.get(q, ("single", q)), []).append(q)
        out[p] = sort_blocks(Block(tuple(qs), mode[qs[0]] if len(qs) > 1 else None) for qs in groups.values())
    if out == list(options):
        return out
    valid = all(option_problem(problem, pool, out[pool.index]) is None for pool in problem.pools) and all(
        edge_derivable(problem, a, b, out[a], out[b]) for a, b in problem.edges)
    return out if valid else baseline_options(problem)


def model_value(fm: FullModel, values: dict[int, int]):
    """The model's objective (exact) at a complete assignment, e.g. full_hint of the unshared plan."""
    return sum((fm.lin.objective[i] * v for i, v in values.items() if v), fm.constant)


def integral_objective(fm: FullModel) -> tuple[list[int] | None, int, object]:
    """(objective as ints, multiplier d, constant) when every weight is exact (ints or Fractions): the
    weights times d = the lcm of their denominators; None when some weight is a float."""
    values = fm.lin.objective + [fm.constant]
    if any(isinstance(w, float) and not w.is_integer() for w in values):
        return None, 1, fm.constant
    d = math.lcm(*(Fraction(w).denominator for w in values if w))
    return [int(Fraction(w) * d) for w in fm.lin.objective], d, fm.constant


def deadline_left(deadline: float | None) -> float | None:
    return None if deadline is None else max(deadline - now(), 1e-3)


# ---------------------------------------------------------------------------------------------- solving
@dataclass
class ComponentResult:
    options: dict[int, list[Block]] | None
    status: str
    objective: object
    bound: object
    stats: dict


def _lp_first(fm: FullModel, unit, deadline: float | None):
    """The LP relaxation (HiGHS) when it is integral and certified within the objective's unit of its own
    bound: then it is the part's proven optimum (the block-count rows make the LP tight on the published
    workloads). A ModelResult, or None."""
    import copy

    from cepopt.formulations import model as container

    relaxed = copy.copy(fm.lin)
    relaxed.integer = [False] * len(fm.lin.names)
    res = container.solve(relaxed, "highs", time_limit=deadline_left(deadline))
    if res.status != "optimal" or res.x is None or any(1e-9 < v < 1 - 1e-9 for v in res.x):
        fm.stats["lp_integral"] = False
        return None
    values = [round(v) for v in res.x]
    objective = fm.lin.value(values)
    bound = res.objective - 1e-9 * max(1.0, abs(float(res.objective)))
    if not container.certify(objective, bound, unit, "min"):
        return None
    fm.stats["lp_integral"] = True
    return container.ModelResult("optimal", objective=objective, bound=objective, x=values, backend="highs-lp",
                                 exact=True)


def solve_component(fm: FullModel, *, backend: str, deadline: float | None, seed: int, workers: int = 2,
                    hint: dict[int, int] | None = None) -> ComponentResult:
    """Solve one part's model in the container (:func:`cepopt.formulations.model.solve`): the blocks
    (None when no solution), status, the objective and a lower bound in the cost model's units (exact
    Fractions when the weights are exact: they are solved as integers, times the lcm of their
    denominators; the container rounds float weights for CP-SAT and then certifies nothing)."""
    import json
    import os

    from cepopt.formulations import model as container

    exact = fm.lin.objective
    coefs, d, constant = integral_objective(fm)
    if coefs is not None:
        fm.lin.objective = coefs
    options = json.loads(os.environ.get("CEPOPT_GLORIA_FULL_CPSAT", "{}")) if backend == "cpsat" else None
    start = None
    if hint:
        start = [0] * len(fm.lin.names)
        for i, v in hint.items():
            start[i] = v
    unit = container.unit_of(fm.lin) if coefs is not None else 0
    try:
        res = _lp_first(fm, unit, deadline)
        if res is None:
            res = container.solve(fm.lin, backend, time_limit=deadline_left(deadline), seed=seed, workers=workers,
                                  lp_heavy=True, feas_tol=1e-9 if backend == "highs" else None, options=options,
                                  hint=start if backend == "cpsat" else None)
    finally:
        fm.lin.objective = exact
    stats = dict(res.stats)
    stats.update(fm.stats, scale=d, exact_weights=coefs is not None, solver_wall_time=res.wall_time)
    options_out = decode_full(fm, lambda i: res.x[i]) if res.has_solution else None
    bound = None if res.bound is None else Fraction(res.bound)
    if bound is not None and unit:  # every plan's (scaled) objective is a multiple of the unit
        bound = math.ceil(bound / unit) * unit
    bound = None if bound is None else bound / d + constant
    obj = None if res.objective is None else Fraction(res.objective) / d + constant
    status = res.status if coefs is not None or res.status != "optimal" else "feasible"
    return ComponentResult(options_out, status, obj, bound, stats)


# --------------------------------------------------------------------------------- the method's driver
# ``cpsat`` / ``milp`` with ``candidates=full``: the parts are built and solved smallest first, each with
# the time left. A start plan (the cheapest of the unshared plan, Greedy's and, for CP-SAT, the NOPRUNE
# optimum), repaired to the kept pairs, is the hint and the fallback of a part without a solution in
# time. The result is "optimal" only when every part's optimum is proven in exact arithmetic and the
# plan's exact cost equals the proven bound; otherwise "feasible" with the best proven bound.

def start_options(problem: GloriaProblem, deadline: float | None = None, seed: int = 0,
                  noprune: bool = True) -> tuple[list, str]:
    """The cheapest of the unshared plan, Greedy's plan and (``noprune``) the optimum over the NOPRUNE
    candidate nodes (CP-SAT on the pairwise labelling model, a quarter of the time left at most):
    (options, which)."""
    found = [(cost.total_cost(problem, cost.baseline_options(problem)), "unshared", cost.baseline_options(problem))]
    try:
        options = greedy_options(problem, "share")
        found.append((cost.total_cost(problem, options), "greedy", options))
    except MethodLimitError:
        pass
    left = None if deadline is None else (deadline - now()) / 4
    if noprune and (left is None or left > 0.05):
        try:
            from cepopt.formulations.gloria import solve_cpsat_gloria

            graph = generate(problem, "noprune", deadline=None if left is None else now() + left)
            choice, _status, _obj, _bound, _stats = solve_cpsat_gloria(
                graph, time_limit=None if left is None else max(left, 0.05), seed=seed)
            if choice is not None:
                options = [graph.options[p][j] for p, j in enumerate(choice)]
                found.append((cost.total_cost(problem, options), "noprune", options))
        except (BuildTimeout, MethodLimitError):
            pass
    value, which, options = min(found, key=lambda t: t[0])
    return list(options), which


def component_cost(problem: GloriaProblem, pools: list[int], options: list) -> object:
    """Exact cost of the pools of one component of the pool graph (their unary terms and out-terms)."""
    inside = set(pools)
    total = 0
    for p in pools:
        inner, end = cost.unary_cost(problem, problem.pools[p], options[p])
        total += inner + end
    for term in problem.terms:
        if term.a in inside:
            total += cost.pair_cost(problem, term, options[term.a], options[term.b])
    return total


def solve_full(problem: GloriaProblem, *, backend: str, time_limit: float | None, seed: int,
               workers: int = 2) -> MethodResult:
    start = now()
    deadline = None if time_limit is None else start + time_limit
    prep = prepare(problem)
    # CP-SAT takes the start plan as its hint (the NOPRUNE optimum is often the optimum); the MILP only
    # falls back on it
    first, which = start_options(problem, deadline, seed, noprune=backend == "cpsat")
    options = repair(problem, prep, first)
    parts = components(problem, prep)
    # the cost outside every part: the unshared plan's cost minus the parts' model values of that plan
    bound: Fraction | None = Fraction(cost.total_cost(problem, cost.baseline_options(problem)))
    stats: dict = {"candidates": "full", "backend": backend, "start_plan": which, "parts": len(parts),
                   "variables": 0, "rows": 0, "triangles": 0, "parts_proven": 0}
    for part in parts:
        got = _solve_part(problem, prep, part, options, backend, deadline, seed, workers, stats)
        bound = None if bound is None or got is None else bound + got
    value = cost.total_cost(problem, options)
    if bound is not None and Fraction(value) < bound:
        raise AssertionError(f"gloria full model: plan cost {value} below the proven bound {bound}")
    optimal = stats["parts_proven"] == len(parts) and bound is not None and Fraction(value) == bound
    stats["optimizer_time_s"] = now() - start
    message = ("Def. 2.7 optimum proven (every partition of every pool)" if optimal else
               "best plan found; the bound is a proven lower bound of Def. 2.7's optimum")
    return MethodResult(cost.plan_from_options(problem, options), status="optimal" if optimal else "feasible",
                        bound=None if bound is None else float(bound), solver_objective=float(value), stats=stats,
                        message=message)


def _solve_part(problem, prep, part, options: list, backend, deadline, seed, workers, stats) -> Fraction | None:
    """Solve one part, write its blocks into ``options``; its bound minus its model value of the unshared
    plan (None when unknown)."""
    try:
        fm = build_full_model(problem, part, deadline, prep)
    except BuildTimeout:
        stats["message"] = "time limit reached while building a part's model"
        return None
    base = model_value(fm, full_hint(fm, cost.baseline_options(problem)))
    res = solve_component(fm, backend=backend, deadline=deadline, seed=seed, workers=workers,
                          hint=full_hint(fm, options))
    for key in ("variables", "rows", "triangles"):
        stats[key] += fm.stats.get(key, 0)
    for p, blocks in (res.options or {}).items():
        kept = [b for b in options[p] if not part[p].intersection(b.queries)]
        options[p] = sort_blocks(kept + blocks)
    stats["parts_proven"] += res.status == "optimal"
    stats["parts_lp_integral"] = stats.get("parts_lp_integral", 0) + bool(fm.stats.get("lp_integral"))
    return None if res.bound is None else Fraction(res.bound) - Fraction(base)
