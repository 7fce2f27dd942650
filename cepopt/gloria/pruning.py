"""Progressive pruning (paper §5.2, specs/gloria.md §4.2): distances from the starts and node pruning.

* Eq. 22: ``n.d_s = inner(n) + sum over predecessor pools of min_{n_k} (n_k.d_s + edge(n_k, n).w)``;
  edge pruning keeps, per node and predecessor pool, only the arg-min edge (Lemma 5.8).
* Node pruning (Def. 5.9, Lemma 5.11): among *comparable* nodes of one pool (identical partition,
  identical unshared blocks, only snapshot types differ), ``n_m`` is pruned by ``n_k`` when every
  shared block of ``n_k`` has a snapshot type no more frequent than in ``n_m`` and

  - ``paper`` mode: ``n_k.d_s < n_m.d_s``;
  - ``safe`` mode: ``n_k.d + Delta <= n_m.d`` (``d`` = d_s with the end edges of every ancestor
    included, which Eq. 22 leaves out) with
    ``Delta = sum over blocks b of n_m and edges (pair terms, end edges) priced with predecessor type
    Ei = X_m(b) and sharing a query with b, of f(Ei) (f(X_k(b)) - 1) g(Ej)``: n_m's expression has
    length 1 there, n_k's has f(X_k(b)) (spec §4.2, the len = 1 case Lemma 5.11 ignores). Each type
    occurs once per query (A15), so these edges leave the pool itself or, when n_m is a Kleene
    super-pool option whose snapshot is the cycle's exit type, the SEQ pool that follows it (which
    holds that snapshot as its own source type): both are summed.

  Soundness: take any plan through n_m, put n_k in its place with its cheapest ancestors, and
  downstream give every block REUSEd from a block b the snapshot X_k(b) instead (those nodes are
  generated from n_k too). Upstream this costs n_k.d instead of at least n_m.d (on an in-tree, which
  shares no ancestor with the rest of the plan; elsewhere the pointwise bound below). Downstream every
  propagation ``f(Ei) len(X, Ei) g(Ej)`` and evaluation ``f(Ej) f(X) |S|`` is no larger with
  f(X_k) <= f(X_m), except where len(X_m, Ei) = 1 < len(X_k, Ei), i.e. Ei = X_m: Delta bounds
  exactly those edges. Under ``fork_accounting="once"`` an edge charges only a share (<= 1) of a
  propagation term, the same share in both plans (it depends on the block's queries, which n_k and n_m
  have alike): Delta, summed unshared, still bounds the difference.

The d_s comparison is sound only when the pool's ancestors form an in-tree (no ancestor pool forks to
another branch); elsewhere the safe rule uses pointwise dominance over every predecessor node.
A node is only pruned by a node that is itself kept, taken in order of increasing d_s, so two equal
nodes never prune each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from cepopt.gloria.cost import Option
from cepopt.gloria.problem import Cost, GloriaProblem, Pool

if TYPE_CHECKING:
    from cepopt.gloria.graph import EdgeTable

__all__ = ["distances", "prune_nodes", "upstream_is_tree"]

INF: Final = float("inf")  # Final: compiled code reads it as a constant


def distances(d_s_preds: dict[int, list[Cost]], tables: dict[int, EdgeTable],
              inner: list[Cost]) -> tuple[list[Cost], list[dict[int, int]]]:
    """Eq. 22 for one pool: (d_s per node, arg-min predecessor node per predecessor pool; the first
    such node on a tie)."""
    n = len(inner)
    if n == 1:
        return _distance_of_one(d_s_preds, tables, inner[0])
    d_s = list(inner)
    best: list[dict[int, int]] = [{} for _ in range(n)]
    for a, table in tables.items():
        mins: list[Cost] = [INF] * n
        arg = [-1] * n
        d_a, rows = d_s_preds[a], table.rows
        _check_rows(d_a, rows)
        for i, (d, row) in enumerate(zip(d_a, rows)):
            for j, w in row:
                v = d + w
                if v < mins[j]:  # rows come in increasing i: the first minimum stays
                    mins[j], arg[j] = v, i
        for j in range(n):
            d_s[j] += mins[j]
            if arg[j] >= 0:
                best[j][a] = arg[j]
    return d_s, best


def _check_rows(d_s_a: list[Cost], rows: list) -> None:
    """One distance per row (per node of the predecessor): ``zip(strict=True)``'s check, made apart
    because compiled (mypyc) a plain ``zip`` in a loop runs natively and one with a keyword does not."""
    if len(d_s_a) != len(rows):
        raise ValueError(f"{len(d_s_a)} distances for {len(rows)} rows")


def _distance_of_one(d_s_preds: dict[int, list[Cost]], tables: dict[int, EdgeTable],
                     inner: Cost) -> tuple[list[Cost], list[dict[int, int]]]:
    """:func:`distances` of a pool of one node (each row ``[(0, w)]`` or empty): the same sums in the
    same order, with one running minimum per table instead of lists over the nodes. Two thirds of a
    published workload's pools hold one node (one query): 1.9 instead of 3.1 us on a 13-row table."""
    d, best = inner, {}
    for a, table in tables.items():
        low: Cost = INF
        arg = -1
        d_a, rows = d_s_preds[a], table.rows
        _check_rows(d_a, rows)
        for i, (dp, row) in enumerate(zip(d_a, rows)):
            if row:
                v = dp + row[0][1]
                if v < low:  # rows come in increasing i: the first minimum stays
                    low, arg = v, i
        d += low
        if arg >= 0:
            best[a] = arg
    return [d], [best]


def _shape(option: Option) -> tuple:
    """The partition with which blocks are unshared: the blocks' queries say both (a block is
    unshared exactly when it holds one query)."""
    return tuple([block[0] for block in option])  # a Block is the tuple (queries, snapshot)


def _delta(problem: GloriaProblem, pool: Pool, keep: Option, drop: Option) -> Cost:
    """``keep`` and ``drop``: two nodes of one shape (:func:`_shape`), whose blocks pair up by position."""
    f = problem.freq
    outgoing = []
    # edges with Ei = X_m(b) leave the pool or, after a Kleene exit snapshot, a successor (module docstring)
    for p in (pool.index, *problem.succs.get(pool.index, [])):
        outgoing += [(term.t, term.queries) for s in problem.succs.get(p, []) for term in problem.edges[(p, s)]]
        outgoing += problem.pools[p].ends
    delta: Cost = 0
    for (ei, ej), queries in outgoing:
        for kept, block in zip(keep, drop):
            if block.snapshot is not None and block.snapshot == ei and queries.intersection(block.queries):
                x_keep = kept.snapshot
                assert x_keep is not None  # it faces a shared block (_dominates)
                delta += f[ei] * (f[x_keep] - 1) * problem.g(ej)
    return delta


def _dominates(problem: GloriaProblem, keep: Option, drop: Option) -> bool:
    """``keep`` and ``drop``: two nodes of one shape (:func:`_shape`). Their blocks pair up by position:
    both hold the same blocks' queries, and the canonical order of blocks with distinct queries is the
    order of their queries. A block is shared exactly when it holds two queries or more, so a shared
    block of ``drop`` faces a shared block of ``keep``."""
    f = problem.freq
    for kept, block in zip(keep, drop):
        x = block[1]  # a Block is the tuple (queries, snapshot): read by index, natively when compiled
        if x is not None and f[kept[1]] > f[x]:
            return False
    return keep != drop


def upstream_is_tree(problem: GloriaProblem, b: int) -> bool:
    """Do all ancestor pools of b have b's branch as their only successor (an in-tree rooted at b)?

    Then d_s is the exact cheapest cost of the ancestors given b's node, and comparing d_s is sound."""
    stack, seen = list(problem.preds.get(b, [])), set()
    while stack:
        a = stack.pop()
        if a in seen:
            return False  # two routes to one ancestor: not a tree
        seen.add(a)
        if len(problem.succs.get(a, [])) != 1:
            return False
        stack.extend(problem.preds.get(a, []))
    return True


def _pointwise(tables: dict[int, EdgeTable], inner: list[Cost], k: int, m: int) -> Cost:
    """Worst case, over every predecessor node n_m can follow, of the change from n_m to n_k."""
    change = inner[k] - inner[m]
    for table in tables.values():
        worst = -INF
        for (i, j), w in table.items():
            if j == m:
                worst = max(worst, table.get((i, k), INF) - w)
        if worst > -INF:
            change += worst
    return change


def prune_nodes(problem: GloriaProblem, pool: Pool, options: list[Option], d_s: list[Cost],
                rule: str, tables: dict[int, EdgeTable] | None = None,
                inner: list[Cost] | None = None) -> list[bool]:
    """Which nodes survive node pruning (rule "paper" or "safe"); unreachable nodes never survive.

    The safe rule compares d_s only when the pool's ancestors form an in-tree (no fork above it);
    otherwise it requires n_k to be no worse than n_m after *every* predecessor node n_m can follow
    (pointwise dominance), since a fork above couples the pool's choice to its sibling branches."""
    alive = [d < INF for d in d_s]
    tree = rule == "paper" or upstream_is_tree(problem, pool.index)
    groups: dict[tuple, list[int]] = {}
    for j, option in enumerate(options):
        if alive[j]:
            groups.setdefault(_shape(option), []).append(j)
    for members in groups.values():
        if len(members) < 2:
            continue
        kept: list[int] = []
        for m in sorted(members, key=lambda j: (d_s[j], j)):
            pruned = False
            for k in kept:
                if not _dominates(problem, options[k], options[m]):
                    continue
                if rule == "paper":
                    pruned = d_s[k] < d_s[m]
                elif tree:
                    pruned = d_s[k] + _delta(problem, pool, options[k], options[m]) <= d_s[m]
                else:
                    pruned = _pointwise(tables or {}, inner or [0.0] * len(options), k, m) \
                        + _delta(problem, pool, options[k], options[m]) <= 0
                if pruned:
                    break
            if pruned:
                alive[m] = False
            else:
                kept.append(m)
    return alive
