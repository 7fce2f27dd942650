"""Gloria's cost model: the one evaluator of any Gloria plan (paper Eqs 2-4, §3.2 edge weights, §6).

Frequencies ``f(E)`` are the instance's ``statistics.rates`` (the paper's |E|). For an edge from a
node of ``Pool(Ei, Ej)`` to a node of ``Pool(Ej, Eh)`` (the cost of processing Ej with predecessor Ei)
and a block ``(S, mu)`` of the first node restricted to the edge's queries ``S'`` (specs/gloria.md §3.2):

=============  ===================  ==========================================================
block          fate in the next     cost
non-shared     KEEP or MERGE_NS     ``f(Ei) f(Ej) |S'|``                                (Eq. 2)
``(S)^X``      REUSE                ``f(Ei) len(X, Ei) g(Ej)``                          (Eq. 3)
``(S)^X``      RESNAP / SPLIT       ``f(Ei) len(X, Ei) g(Ej) + f(Ej) f(X) |S'|``        (Eqs 3+4)
=============  ===================  ==========================================================

with ``len(X, Ei) = 1`` if X = Ei else ``f(X)``, and ``g(Ej) = 1`` (the paper's Eq. 3, no |E|
factor: ``cost_model="paper"``, the default) or ``f(Ej)`` (``cost_model="physical"``, spec §10 A3).
REUSE means the next node holds a block with the same snapshot type X that contains ``S'`` and no
query outside ``S``. Start edges cost ``f(Es) |Q_start|``; end edges cost like a final evaluation
(non-shared ``f(Ei) f(Ee) |S'|``, shared ``f(Ei) len(X,Ei) g(Ee) + f(Ee) f(X) |S'|``).

Fork accounting (spec §10 A6, problem option ``fork_accounting``). A block of a pool's transition
``(Ei, Ej)`` may feed several edges that each price ``Ej`` with predecessor ``Ei``: the *fan-out* of the
pool's transition (:attr:`~cepopt.gloria.problem.GloriaProblem.fanout`): the pair terms to successor
pools, the end edges at ``Ej`` and, in a Kleene super-pool, the cycle's internal edges leaving ``Ej``.

* ``"edge"`` (default, the paper's per-edge accounting, needed for Table 5's 1204): every edge charges
  the block's whole propagation term (``f(Ei) len(X,Ei) g(Ej)`` of a shared block, ``f(Ei) f(Ej)`` per
  unshared query), so a shared block feeding two successor pools pays it twice.
* ``"once"``: every block's propagation term is charged once in all, split over its fan-out in
  proportion to the number of the block's queries each edge carries: edge ``s`` gets
  ``|S & Q_s| / sum over the fan-out of |S & Q_s'|`` of it (:meth:`GloriaProblem.share`). An unshared
  query is a block of one: it is split over the edges it leaves on (1 unless it leaves on several).
  Start edges likewise charge ``f(Es)`` once per query. A Kleene cycle's internal edge takes its
  share as a whole (V2's into-X price included). Evaluation terms (``f(Ej) f(X) |S'|``, a RESNAP,
  SPLIT or end) are per query and per edge under both and are not split.

  The decision, and why. A6 asks for the term "split proportionally over the successors, as the
  authors' code does with rightQ/leftQ". The authors' ``CostModel.checkToReuseCost`` charges the
  fraction ``|right block| / |left block|`` = ``|S & Q_s| / |S|`` of the term on the edge to successor
  ``s``: proportional to the number of queries each successor carries (not to frequencies or to the
  number of successors), so that is the proportion used here. Two points differ from that code, both
  so that the term is charged exactly once: (1) end edges and a cycle's internal edges count as
  successors, because the spec's §3.2 / §6 price the term on them as well (the authors' code charges a
  shared block no propagation on its end edge at all); (2) the denominator is the sum over the fan-out,
  not ``|S|``. The two denominators agree whenever every query of the block leaves on exactly one edge
  (every SEQ fork); where a query leaves on several (a Kleene cycle's feedback and exit edges, an end
  type the query also continues from, a SEQ edge that bypasses a single-type ``B+``), ``|S|`` would
  still charge the term more than once. With a single successor the share is 1, so "once" equals
  "edge" on every template without forks. The share depends only on a block of one pool and on the
  template, so the cost stays a sum of unary and pairwise terms: every method (greedy, path search,
  tree DP, exhaustive, CP-SAT, MILP) reads its weights from the functions below and optimizes the
  same objective, and :func:`evaluate` re-scores any plan to it. Costs stay exact: a share is an int
  1 or a :class:`~fractions.Fraction`, so integer frequencies give exact rational costs.

Kleene super-pools (§6): the cycle weight sums the internal edges between consecutive transitions of
the cycle: non-shared ``f(Ei) f(Ej) |Q_K|``; shared with X: V1 ``f(Ei) len(X,Ei) g(Ej)`` on every
edge; V2 the same except edges into X cost ``f(Ei) f(X) |Q_K|`` (``kleene_cycle_cost``, default V2,
spec §5). Entering a super-pool prices every incoming block as KEEP/MERGE_NS or RESNAP/SPLIT (A7).

Plan validity (derivability, §4.1 and §7.2): along a primary pair, a block of the next node whose
snapshot type is not the shared transition's source must equal a restricted block of the previous
node with that snapshot type (REUSE); a shared block of two or more queries is never split (Lemma 5.2):
it is REUSEd or goes whole into a block with snapshot type Ej (RESNAP or merge); an unshared query, or
a shared block cut to one query by a fork (SPLIT, A8), goes to an unshared block or into a block with
snapshot type Ej (KEEP, MERGE_NS); a query that starts at Ei is unshared or in a block with
snapshot Ei. Inside a Kleene group every transition carries the same plan.
"""

from __future__ import annotations

from collections.abc import Sequence

from cepopt.errors import CepoptError
from cepopt.gloria.block import Block
from cepopt.gloria.canonical import queries_of, sort_blocks
from cepopt.gloria.plan import GloriaPlan
from cepopt.gloria.problem import Cost, Frequency, GloriaProblem, PairTerm, Pool
from cepopt.solution import Objective

__all__ = ["ASide", "BSide", "OBJECTIVE", "evaluate", "predict", "pair_cost", "pair_derivable", "unary_cost",
           "unary_costs", "restriction", "option_problem", "plan_options", "plan_from_options", "start_cost",
           "baseline_options", "total_cost", "edge_cost", "edge_derivable"]

Option = tuple[Block, ...]
# The graph build's functions below (TermTable, end_cost, cycle_cost, ...) read a block by index,
# ``block[0]`` its queries and ``block[1]`` its snapshot (Block is that tuple): compiled (mypyc), the
# ``queries`` / ``snapshot`` properties are generic attribute lookups, about 10,000 per published file.

OBJECTIVE = Objective("Cost", "Gloria cost model, Eqs. 2-4 and §3.2 edge weights, in operations", "min",
                      "operations: propagations + evaluations")


def flen(problem: GloriaProblem, x: str, ei: str) -> Frequency:
    """Expression length at a predecessor of type Ei for snapshot type X (§3.2)."""
    return 1 if x == ei else problem.freq[x]


def _restricted(blocks: Sequence[Block], queries: frozenset[str]):
    for block in blocks:
        sub = queries.intersection(block[0])
        if sub:
            yield block, sub


def _member(queries: frozenset[str]) -> str:
    """Some query of a non-empty set: ``next(iter(queries))``, which compiled (mypyc) looks up and calls
    as a Python builtin, a loop it runs natively."""
    for q in queries:
        return q
    raise ValueError("no query in an empty set")


def block_index(blocks: Sequence[Block]) -> dict[str, int]:
    """Each query's block position in an option."""
    return {q: k for k, b in enumerate(blocks) for q in queries_of(b)}


def restriction(option: Option, index: dict[str, int], queries: list[str]) -> tuple[Block, ...]:
    """The block of each of ``queries`` (a list: one fixed order) in an option, given its
    :func:`block_index`: a node's restriction to some queries read by position, without a set or a
    sort (two options give equal tuples exactly when they hold the same blocks with these queries)."""
    return tuple([option[index[q]] for q in queries])


def _restricted_at(blocks: Sequence[Block], index: dict[str, int],
                   queries: frozenset[str]) -> list[tuple[Block, frozenset[str]]]:
    """:func:`_restricted` (same blocks, same order) by looking the queries up instead of intersecting
    every block: a big pool's option is mostly blocks of one query."""
    groups: dict[int, list[str]] = {}
    for q in queries:
        k = index.get(q)
        if k is not None:
            groups.setdefault(k, []).append(q)
    return [(blocks[k], frozenset(groups[k])) for k in sorted(groups)]


def pair_cost(problem: GloriaProblem, term: PairTerm, blocks_a: Option, blocks_b: Option) -> Cost:
    """Weight of one pair term (cost of Ej with predecessor Ei) for the options of its two pools."""
    ei, ej = term.t
    f = problem.freq
    cost: Cost = 0
    where_b = None
    for block, sub in _restricted(blocks_a, term.queries):
        share = problem.share(term.a, term.t, block.queries, term.queries)
        if block.snapshot is None:
            cost += f[ei] * f[ej] * len(sub) * share
            continue
        x = block.snapshot
        cost += f[ei] * flen(problem, x, ei) * problem.g(ej) * share
        if not term.entry:
            if where_b is None:
                where_b = {q: b for b in blocks_b for q in b.queries}
            first = where_b.get(next(iter(sub)))
            if (first is not None and first.snapshot == x and sub.issubset(first.queries)
                    and set(block.queries).issuperset(first.queries)):
                continue  # REUSE
        cost += f[ej] * f[x] * len(sub)
    return cost


def pair_derivable(problem: GloriaProblem, term: PairTerm, blocks_a: Option, blocks_b: Option) -> bool:
    """Can the option of pool b follow the option of pool a for the term's primary queries?"""
    prim = term.primary
    if not prim or term.entry:
        return True
    ej = term.t2[0]
    where_b = {q: b for b in blocks_b for q in b.queries}
    for block, sub in _restricted(blocks_a, prim):
        if block.snapshot is not None and len(sub) >= 2:
            # A Q-set is never split (Lemma 5.2): REUSE it, or re-snapshot it whole into a block of Ej.
            target = where_b.get(next(iter(sub)))
            if target is None:
                return False
            if target.snapshot == block.snapshot and set(target.queries) == sub:
                continue  # REUSE
            if target.snapshot != ej or not sub.issubset(target.queries):
                return False
            continue
        for q in sub:  # unshared (KEEP / MERGE_NS) or a shared block cut to one query (SPLIT, A8)
            tb = where_b.get(q)
            if tb is None or not (tb.snapshot is None or tb.snapshot == ej):
                return False
    a_blocks = {q: b for b in blocks_a for q in b.queries}
    for block in blocks_b:
        if block.snapshot is None or block.snapshot == ej:
            continue
        inside = prim.intersection(block.queries)
        if not inside:
            continue
        if len(inside) != len(block.queries):
            return False
        src = a_blocks.get(next(iter(inside)))
        if src is None or src.snapshot != block.snapshot or not prim.intersection(src.queries) == inside:
            return False
    return True


#: :meth:`TermTable.side_a`: (fixed cost, [(a query of sub, sub, x, block queries, evaluation)],
#: (whole shared blocks [(a query, sub, x)], loose queries (as sets), the option, its block index)). Typed, like
#: :data:`BSide`, so that compiled code (mypyc) reads them with native tuple, dict and set operations.
ASide = tuple[Cost, list[tuple[str, frozenset[str], str, frozenset[str], Cost]],
              tuple[list[tuple[str, frozenset[str], str]], list[frozenset[str]], Option, dict[str, int]]]
#: :meth:`TermTable.side_b`: (each query's block, the inherited blocks [(block, its primary queries, one
#: of them)] or None)
BSide = tuple[dict[str, Block], list[tuple[Block, frozenset[str], str]] | None]


class TermTable:
    """:func:`pair_cost` and :func:`pair_derivable` of one pair term over many option pairs, with every part
    that depends on one side only computed once per option (what GLORIA's graph build spends its time on),
    and the term's constant factors once per term. Same values, in the same arithmetic order, as the two
    functions (tests compare them on every edge of random graphs)."""

    def __init__(self, problem: GloriaProblem, term: PairTerm):
        self.problem, self.term = problem, term
        ei, ej = term.t
        f = problem.freq
        self.ej = term.t2[0]
        self.queries = term.queries
        #: the one query of a term that carries one (the usual fork to a single query), else None
        self.single = _member(term.queries) if len(term.queries) == 1 else None
        self.prim = term.primary
        self.checks = bool(term.primary) and not term.entry  # derivability is enforced on this term
        self.split = not problem.unit_shares
        self.unshared = f[ei] * f[ej]  # the first product of an unshared query's term
        self._shared: dict[str, tuple] = {}  # snapshot type -> (propagation factor, evaluation factor)
        self._ei = ei

    def _factors(self, x: str) -> tuple:
        """(f(Ei) len(X, Ei) g(Ej), f(Ej) f(X)) of a shared block with snapshot type X, computed once."""
        factors = self._shared.get(x)
        if factors is None:
            problem, ei = self.problem, self._ei
            ej = self.term.t[1]
            f = problem.freq
            factors = self._shared[x] = (f[ei] * flen(problem, x, ei) * problem.g(ej), f[ej] * f[x])
        return factors

    def side_a(self, blocks_a: Option, index: dict[str, int] | None = None) -> ASide:
        """(cost that no b-option changes, [(a query of sub, sub, x, block queries, evaluation)] of shared
        blocks whose evaluation REUSE saves, derivability data) for one option of pool a; ``index``: each
        query's block position in the option (:func:`block_index`), computed once per option by the caller."""
        if index is None:
            index = block_index(blocks_a)
        term = self.term
        if self.single is not None:
            k = index.get(self.single)
            restricted = [] if k is None else [(blocks_a[k], self.queries)]
        else:
            restricted = _restricted_at(blocks_a, index, self.queries)
        fixed: Cost = 0
        shared: list[tuple[str, frozenset[str], str, frozenset[str], Cost]] = []
        entry, split, factors = term.entry, self.split, self._shared
        for block, sub in restricted:
            share = self.problem.share(term.a, term.t, block[0], self.queries) if split else 1
            x = block[1]
            if x is None:
                fixed += self.unshared * len(sub) * share
                continue
            propagation, evaluation = factors.get(x) or self._factors(x)
            fixed += propagation * share
            if entry:
                fixed += evaluation * len(sub)
            else:
                shared.append((_member(sub), sub, x, block.members, evaluation * len(sub)))
        whole: list[tuple[str, frozenset[str], str]] = []
        loose: list[frozenset[str]] = []  # queries unshared, or alone in a block: as sets, not copied
        if self.checks:
            prim = self.prim
            for block, sub in restricted:  # the primary queries are some of the term's
                if not prim >= sub:
                    sub = sub & prim
                    if not sub:
                        continue
                if block[1] is not None and len(sub) >= 2:
                    whole.append((_member(sub), sub, block[1]))
                else:
                    loose.append(sub)
        return fixed, shared, (whole, loose, blocks_a, index)

    def side_b(self, blocks_b: Option) -> BSide:
        """(where each query's block is, the inherited blocks holding primary queries, or None when some
        inherited block mixes in other queries: then no option of pool a derives this one). ``blocks_b``:
        an option of pool b, or its blocks that hold a query of the term (all the term reads)."""
        where_b: dict[str, Block] = {q: b for b in blocks_b for q in queries_of(b)}
        inherited: list[tuple[Block, frozenset[str], str]] = []
        if self.checks:
            prim, ej = self.prim, self.ej
            for block in blocks_b:
                if block[1] is None or block[1] == ej:
                    continue
                inside = prim & block.members  # set operators, not methods: a generic call compiled
                if not inside:
                    continue
                if len(inside) != len(block[0]):
                    return where_b, None
                inherited.append((block, inside, _member(inside)))
        return where_b, inherited

    def weight(self, a_side: ASide, b_side: BSide) -> Cost | None:
        """:meth:`cost` where :meth:`derivable`, else None (one call for the graph build)."""
        return self.cost(a_side, b_side) if self.derivable(a_side, b_side) else None

    def single_block(self, blocks_a: Option, index: dict[str, int]) -> Block | None:
        """The block of a one-query term's query (``self.single``) in an option of pool a, given its
        :func:`block_index`; None when the option lacks it: all :meth:`single_weight` reads of it."""
        k = index.get(self.single) if self.single is not None else None
        return None if k is None else blocks_a[k]

    def single_weight(self, block: Block | None, b_side: BSide) -> Cost | None:
        """:meth:`weight` of a one-query term (``self.single``) from an option of pool a whose block of
        that query is ``block`` (:meth:`single_block`), without building the a side: the same values, in
        the same arithmetic order.

        What is left of :meth:`side_a`, :meth:`derivable` and :meth:`cost` with one query: no whole
        shared block (a sub of one query), the query loose when primary, and no inherited block (a
        shared block of pool b holds two queries, so it is never inside the term's primary queries).
        Why: two thirds of a published workload's edges are forks to one query; building the a side
        took half of their tables' instructions."""
        where_b, inherited = b_side
        q = self.single
        assert q is not None  # a one-query term
        if self.checks:
            if inherited is None:
                return None
            if block is not None and q in self.prim:
                tb = where_b.get(q)
                if tb is None or not (tb[1] is None or tb[1] == self.ej):
                    return None
        fixed: Cost = 0
        if block is None:
            return fixed
        term = self.term
        share = self.problem.share(term.a, term.t, block[0], self.queries) if self.split else 1
        x = block[1]
        if x is None:  # "* 1": side_a's "* len(sub)", kept for the same arithmetic
            fixed += self.unshared * 1 * share
            return fixed
        propagation, evaluation = self._shared.get(x) or self._factors(x)
        fixed += propagation * share
        if term.entry:
            fixed += evaluation * 1
            return fixed
        first = where_b.get(q)
        if first is not None and first[1] == x and block.members >= first.members:
            return fixed  # REUSE (q is in the block holding it)
        return fixed + evaluation * 1

    @staticmethod
    def cost(a_side: ASide, b_side: BSide) -> Cost:
        fixed, shared, _ = a_side
        if not shared:
            return fixed
        where_b = b_side[0]
        cost = fixed
        for q, sub, x, queries, evaluation in shared:
            first = where_b.get(q)
            if first is not None and first[1] == x and sub <= first.members and queries >= first.members:
                continue  # REUSE
            cost += evaluation
        return cost

    def derivable(self, a_side: ASide, b_side: BSide) -> bool:
        if not self.checks:
            return True
        whole, loose, blocks_a, index = a_side[2]
        where_b, inherited = b_side
        if inherited is None:
            return False
        ej = self.ej
        for q, sub, x in whole:
            target = where_b.get(q)
            if target is None:
                return False
            if target[1] == x and len(target[0]) == len(sub) and sub >= target.members:
                continue  # REUSE
            if target[1] != ej or not sub <= target.members:
                return False
        for sub in loose:
            for q in sub:
                tb = where_b.get(q)
                if tb is None or not (tb[1] is None or tb[1] == ej):
                    return False
        prim = self.prim
        for block, inside, q in inherited:
            k = index.get(q)
            src = None if k is None else blocks_a[k]
            if src is None or src[1] != block[1] or (prim & src.members) != inside:
                return False
        return True


def edge_cost(problem: GloriaProblem, a: int, b: int, blocks_a: Option, blocks_b: Option) -> Cost:
    return sum(pair_cost(problem, term, blocks_a, blocks_b) for term in problem.edges[(a, b)])


def edge_derivable(problem: GloriaProblem, a: int, b: int, blocks_a: Option, blocks_b: Option) -> bool:
    return all(pair_derivable(problem, term, blocks_a, blocks_b) for term in problem.edges[(a, b)])


def start_cost(problem: GloriaProblem, pool: Pool) -> Cost:
    """Start edges into the pool: f(Es) |Q_start| (independent of the option, §3.2); under
    fork_accounting=once f(Es) is charged once per query over the pools it starts in."""
    if problem.unit_shares:  # their sum is the count
        return problem.freq[pool.source] * len(pool.start_queries)
    return problem.freq[pool.source] * sum(problem.start_share(q) for q in pool.start_queries)


def end_cost(problem: GloriaProblem, pool: Pool, blocks: Option) -> Cost:
    f = problem.freq
    split = not problem.unit_shares
    cost: Cost = 0
    for t, ending in pool.ends:
        ei, ee = t
        for block, sub in _restricted(blocks, ending):
            share = problem.share(pool.index, t, block[0], ending) if split else 1
            if block[1] is None:
                cost += f[ei] * f[ee] * len(sub) * share
            else:
                x = block[1]
                cost += f[ei] * flen(problem, x, ei) * problem.g(ee) * share + f[ee] * f[x] * len(sub)
    return cost


def cycle_cost(problem: GloriaProblem, pool: Pool, blocks: Option) -> Cost:
    """Internal weight P.w of a Kleene super-pool option (§6, V1/V2); under fork_accounting=once each
    internal edge is charged its share of the fan-out of its first transition (module docstring)."""
    f = problem.freq
    shared = blocks[0][1] if len(blocks) == 1 and blocks[0][1] is not None else None
    n = len(pool.queries)
    split = not problem.unit_shares
    cost: Cost = 0
    if shared is None:  # every query a block of its own (n under "edge", where each share is 1)
        for t, _t2 in pool.internal:
            ei, ej = t
            shares = sum(problem.share(pool.index, t, (q,), pool.queries) for q in pool.queries) if split else n
            cost += f[ei] * f[ej] * shares
        return cost
    v2 = problem.kleene_cycle_cost == "V2"
    for t, _t2 in pool.internal:
        ei, ej = t
        share = problem.share(pool.index, t, blocks[0][0], pool.queries) if split else 1
        if v2 and ej == shared:
            cost += f[ei] * f[shared] * n * share
        else:
            cost += f[ei] * flen(problem, shared, ei) * problem.g(ej) * share
    return cost


def unary_costs(problem: GloriaProblem, pool: Pool, options: Sequence[Option]) -> list[tuple[Cost, Cost]]:
    """(start + internal cycle weight, end-edge weight) of each option of the pool (the start edges,
    alike for every option, priced once). A SEQ pool no query ends in has end weight 0 (what
    :func:`end_cost` sums over no end edge) for every option: 381 of the 482 options generated on
    kleeneRatio workload_5, not priced one by one."""
    start = start_cost(problem, pool)
    if pool.kind == "kleene":
        return [(start + cycle_cost(problem, pool, blocks), end_cost(problem, pool, blocks)) for blocks in options]
    if not pool.ends:
        return [(start, 0)] * len(options)
    return [(start, end_cost(problem, pool, blocks)) for blocks in options]


def unary_cost(problem: GloriaProblem, pool: Pool, blocks: Option) -> tuple[Cost, Cost]:
    """(start + internal cycle weight, end-edge weight) of an option."""
    return unary_costs(problem, pool, (blocks,))[0]


def option_problem(problem: GloriaProblem, pool: Pool, blocks: Option) -> str | None:
    """Why an option is not a valid partition of the pool's queries (None when it is valid)."""
    seen = [q for b in blocks for q in b.queries]
    if len(seen) != len(set(seen)) or set(seen) != set(pool.queries):
        return f"{pool.label}: blocks do not partition the queries {sorted(pool.queries)}"
    if pool.kind == "kleene":
        if len(blocks) == 1 and blocks[0].snapshot is not None:
            if blocks[0].snapshot not in pool.types:
                return f"{pool.label}: snapshot type {blocks[0].snapshot} is not a type of the cycle"
            return None
        if all(b.snapshot is None for b in blocks):
            return None
        return f"{pool.label}: a Kleene cycle is shared by all its queries or by none (Lemma 6.1)"
    for block in blocks:
        if block.snapshot is None:
            continue
        if block.snapshot == pool.target:
            return f"{pool.label}: snapshot type {block.snapshot} is the transition's target"
        if block.snapshot != pool.source:
            if block.snapshot not in problem.admissible_snapshots(pool, frozenset(block.queries)):
                return f"{pool.label}: snapshot type {block.snapshot} is not upstream of {block.queries}"
            if pool.start_queries.intersection(block.queries):
                return f"{pool.label}: a starting query can only share with snapshot {pool.source}"
    return None


def total_cost(problem: GloriaProblem, options: Sequence[Option]) -> Cost:
    """Cost of a choice of one option per pool (no validity check)."""
    cost: Cost = 0
    for pool in problem.pools:
        inner, end = unary_cost(problem, pool, options[pool.index])
        cost += inner + end
    for term in problem.terms:
        cost += pair_cost(problem, term, options[term.a], options[term.b])
    return cost


def plan_options(problem: GloriaProblem, plan: GloriaPlan) -> list[Option]:
    """The option of every pool in ``plan``; raises CepoptError if the plan is not valid."""
    options: list[Option] = []
    covered: dict[tuple[str, str], set[str]] = {}
    for pool in problem.pools:
        per_transition = []
        for t in pool.transitions:
            tp = plan.transition(*t)
            if tp is None:
                raise CepoptError(f"plan: no partition for transition {t[0]}->{t[1]}")
            blocks = []
            for block in tp.blocks:
                inside = pool.queries.intersection(block.queries)
                if not inside:
                    continue
                if len(inside) != len(block.queries):
                    raise CepoptError(f"plan: block {list(block.queries)} on {t[0]}->{t[1]} mixes queries "
                                      "that cannot share (different sharing classes or Kleene groups)")
                blocks.append(block)
            covered.setdefault(t, set()).update(q for b in blocks for q in b.queries)
            per_transition.append(sort_blocks(blocks))
        if any(p != per_transition[0] for p in per_transition):
            raise CepoptError(f"plan: {pool.label} must carry the same plan on every cycle transition")
        option = per_transition[0]
        why = option_problem(problem, pool, option)
        if why:
            raise CepoptError(f"plan: {why}")
        options.append(option)
    for tp in plan.transitions:
        extra = tp.queries - covered.get(tp.transition, set())
        if extra:
            raise CepoptError(f"plan: transition {tp.source}->{tp.target} lists queries {sorted(extra)} "
                              "that do not use it")
    for (a, b), _terms in problem.edges.items():
        if not edge_derivable(problem, a, b, options[a], options[b]):
            raise CepoptError(f"plan: the option of {problem.pools[b].label} cannot be derived from the "
                              f"option of {problem.pools[a].label} (§4.1)")
    return options


def plan_from_options(problem: GloriaProblem, options: Sequence[Option]) -> GloriaPlan:
    """The plan of one option per pool. The pools of a transition hold disjoint queries and an option
    partitions its pool's queries, so a transition's blocks are disjoint when every option is one of its
    pool's (what every method returns; a query in two blocks of an option is not caught here)."""
    blocks: dict[tuple[str, str], list[Block]] = {}
    for pool in problem.pools:
        for t in pool.transitions:
            blocks.setdefault(t, []).extend(options[pool.index])
    return GloriaPlan.from_blocks(blocks, disjoint=True)


def baseline_options(problem: GloriaProblem) -> list[Option]:
    return [tuple(Block((q,)) for q in sorted(pool.queries)) for pool in problem.pools]


def evaluate(problem: GloriaProblem, plan: GloriaPlan) -> float:
    """The family objective: the Gloria cost of ``plan`` after checking it is valid (the exact value is
    :func:`total_cost` of :func:`plan_options`)."""
    return float(total_cost(problem, plan_options(problem, plan)))


def predict(problem: GloriaProblem, plan: GloriaPlan) -> float:
    """What the executor should measure: the plan's Gloria cost (Eqs. 2-4), which counts the
    propagations and evaluations the Gloria kernel counts. The unshared plan is
    ``plan_from_options(problem, baseline_options(problem))``."""
    return evaluate(problem, plan)
