"""The GLORIA graph over candidate pools (paper §4, Defs 4.1 and 4.3; specs/gloria.md §3 and §7.2).

A :class:`CandidateGraph` holds, for every pool of the problem, its candidate nodes (options: one
annotated partition of the pool's queries), each node's unary weight (start edges + the internal cycle
weight of a Kleene super-pool, and separately the end edges) and, for every pair of adjacent pools, the
allowed node pairs with their exact edge weights (§3.2). A path picks one node per pool (Def. 4.3);
its weight is the plan's cost (Lemma 4.4), i.e. :func:`cepopt.gloria.cost.total_cost`.

Candidate sets come from node generation (nodes.py: NOPRUNE, GLORIA, safe pruning) or from the
exhaustive space (exhaustive.py). Every method (path search, greedy, brute force, CP-SAT, MILP) reads the
same graph, so their values are comparable on the same candidates.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, Mapping, Sized
from dataclasses import dataclass, field
from typing import Protocol, cast

from cepopt.clock import now
from cepopt.gloria.canonical import distinct_blocks
from cepopt.gloria.cost import (
    ASide,
    BSide,
    Option,
    TermTable,
    block_index,
    plan_from_options,
    restriction,
    unary_costs,
)
from cepopt.gloria.plan import GloriaPlan
from cepopt.gloria.problem import Cost, GloriaProblem

__all__ = ["BuildTimeout", "CandidateGraph", "EdgeTable", "check_deadline", "complete_edges", "describe_option",
           "pool_graph_is_forest"]


class BuildTimeout(Exception):
    """Building a candidate graph ran past its deadline."""


def check_deadline(deadline: float | None) -> None:
    """Raise :class:`BuildTimeout` once ``deadline`` (a ``now()`` value) has passed."""
    if deadline is not None and now() > deadline:
        raise BuildTimeout


def describe_option(option) -> str:
    """``(q1,q2)^A (q3)``: the notation of the paper and of the bundled instances' "expected"."""
    return " ".join("(" + ",".join(b.queries) + ")" + (f"^{b.snapshot}" if b.snapshot else "") for b in option)


Row = list[tuple[int, Cost]]


class _RowItems(ItemsView):
    """``table.items()`` read off the rows (no pair dictionary built)."""

    def __init__(self, table: EdgeTable):
        super().__init__(table)
        self._table = table

    def __iter__(self) -> Iterator[tuple[tuple[int, int], Cost]]:
        for i, row in enumerate(self._table.rows):
            for j, w in row:
                yield (i, j), w


class EdgeTable(Mapping):
    """The allowed node pairs of one adjacent pool pair (a, b) and their weights: a read-only mapping
    ``(i, j) -> w`` (i a node of a, j a node of b) stored as one *row* per node of a, the list of
    ``(j, w)`` of its allowed pairs in increasing j.

    Why rows and not a dictionary of pairs: the nodes of a that are alike for the edge (the same blocks
    holding the edge's queries) have equal rows, computed once and shared, so building a table costs
    its distinct rows, not its pairs; Eq. 22 (pruning.distances) and the tree DP (path_search) scan rows.
    Point look-ups (``table[(i, j)]``, ``in``, ``get``), which the solvers and brute force make, go
    through a dictionary of the pairs built on the first one."""

    __slots__ = ("rows", "_pairs")

    def __init__(self, rows: list[Row]):
        self.rows = rows
        self._pairs: dict[tuple[int, int], Cost] | None = None

    def _lookup(self) -> dict[tuple[int, int], Cost]:
        if self._pairs is None:
            self._pairs = {(i, j): w for i, row in enumerate(self.rows) for j, w in row}
        return self._pairs

    def __getitem__(self, pair: tuple[int, int]) -> Cost:
        return self._lookup()[pair]

    def __contains__(self, pair: object) -> bool:
        """Read off the row (short) unless the pair dictionary exists: the search's consistency check
        asks one pair per table, not worth a dictionary."""
        if self._pairs is not None:
            return pair in self._pairs
        if not isinstance(pair, tuple) or len(pair) != 2:
            return False
        i, j = pair
        if not isinstance(i, int) or not 0 <= i < len(self.rows):
            return False
        for column, _ in self.rows[i]:
            if column == j:
                return True
        return False

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return (pair for pair, _ in self.items())

    def __len__(self) -> int:
        pairs = 0
        for row in self.rows:  # a loop, not sum(map(len, ...)): native when compiled
            pairs += len(row)
        return pairs

    def items(self) -> _RowItems:
        return _RowItems(self)

    def __repr__(self) -> str:
        return f"EdgeTable({dict(self.items())!r})"

    def keep_columns(self, index: dict[int, int]) -> EdgeTable:
        """The table over the nodes of b in ``index`` (old position -> new position, increasing), rows
        still shared where they were."""
        kept: dict[int, Row] = {}  # id of an old row -> its new row
        rows = []
        for row in self.rows:
            new = kept.get(id(row))
            if new is None:
                new = kept[id(row)] = [(index[j], w) for j, w in row if j in index]
            rows.append(new)
        return EdgeTable(rows)


@dataclass
class CandidateGraph:
    """Candidate nodes per pool and the allowed, weighted node pairs per adjacent pool pair."""

    problem: GloriaProblem
    space: str
    options: list[list[Option]]
    inner: list[list[Cost]] = field(default_factory=list)
    end: list[list[Cost]] = field(default_factory=list)
    allowed: dict[tuple[int, int], EdgeTable] = field(default_factory=dict)
    d_s: list[list[Cost]] | None = None
    best_in: list[list[dict[int, int]]] | None = None
    stats: dict = field(default_factory=dict)
    #: every generated node as (pool, option, d_s, survived pruning); empty for non-generated spaces
    trace: list = field(default_factory=list)

    @property
    def num_nodes(self) -> int:
        return sum(len(o) for o in self.options)

    @property
    def num_edges(self) -> int:
        return sum(len(t) for t in self.allowed.values())

    def plan(self, choice: list[int]) -> GloriaPlan:
        return plan_from_options(self.problem, [self.options[p][j] for p, j in enumerate(choice)])

    def weight(self, choice: list[int]) -> Cost:
        """Path weight of a choice of one node per pool (inf when some pair is not allowed)."""
        total = sum(self.inner[p][j] + self.end[p][j] for p, j in enumerate(choice))
        for (a, b), table in self.allowed.items():
            w = table.get((choice[a], choice[b]))
            if w is None:
                return float("inf")
            total += w
        return total


def fill_unary(graph: CandidateGraph) -> None:
    problem = graph.problem
    graph.inner, graph.end = [], []
    for pool in problem.pools:
        pairs = unary_costs(problem, pool, graph.options[pool.index])
        graph.inner.append([p[0] for p in pairs])
        graph.end.append([p[1] for p in pairs])


def _carried_blocks(options: list[Option], carried: frozenset[str],
                    indexes: list[dict[str, int]] | None = None) -> list:
    """Per option, the block of each query of ``carried`` (in one fixed order of the queries; the block
    itself when one query is carried): all an edge's weight and derivability read of the option. Two
    options have the same such blocks exactly when they hold the same blocks with a carried query.
    ``indexes``: :func:`~cepopt.gloria.cost.block_index` of every option, if known."""
    if indexes is None:
        indexes = [block_index(o) for o in options]
    elif len(indexes) != len(options):  # zip(strict=True)'s check: compiled, a plain zip runs natively
        raise ValueError(f"{len(indexes)} block indexes for {len(options)} options")
    if len(carried) == 1:  # a fork to one query: the query's block
        (q,) = carried
        return [o[index[q]] for o, index in zip(options, indexes)]
    queries = list(carried)
    return [restriction(o, index, queries) for o, index in zip(options, indexes)]


def _weights(tables: list[TermTable], a_sides: list[ASide], b_sides: list[list[BSide]]) -> list[Cost | None]:
    """The weight from one node of a to each given node of b, or None where b is not derivable, summed
    over the edge's terms."""
    out: list[Cost | None] = []
    for j in range(len(b_sides[0])):
        if all(t.derivable(sa, sb[j]) for t, sa, sb in zip(tables, a_sides, b_sides, strict=True)):
            out.append(sum(t.cost(sa, sb[j]) for t, sa, sb in zip(tables, a_sides, b_sides, strict=True)))
        else:
            out.append(None)
    return out


def edge_table(problem: GloriaProblem, a: int, b: int, opts_a: list[Option], opts_b: list[Option],
               deadline: float | None = None, indexes_a: list[dict[str, int]] | None = None,
               indexes_b: list[dict[str, int]] | None = None) -> EdgeTable:
    """Allowed (derivable) node pairs between pools a and b with their §3.2 weights (cost.edge_derivable
    and cost.edge_cost, each side's part computed once per option: :class:`~cepopt.gloria.cost.TermTable`);
    ``indexes_a`` / ``indexes_b``: :func:`~cepopt.gloria.cost.block_index` of every option of a / b, if
    the caller has them.

    A pair's weight and derivability read only the blocks of either node that hold a query of the edge's
    terms, so when the edge carries only some of a pool's queries (a fork), nodes of that pool with the
    same such blocks, in the same order, are alike for the edge: each distinct pair of restrictions is
    computed once (the same values, in the same arithmetic order) and shared by the nodes alike
    (:class:`EdgeTable`)."""
    terms = problem.edges[(a, b)]
    tables = [TermTable(problem, term) for term in terms]
    if indexes_a is None:
        indexes_a = [block_index(oa) for oa in opts_a]
    carried = terms[0].queries if len(terms) == 1 else frozenset().union(*(term.queries for term in terms))
    if len(carried) == len(problem.pools[a].queries):  # every node of a its own row
        keys_a: list = list(range(len(opts_a)))
    else:
        keys_a = _carried_blocks(opts_a, carried, indexes_a)
    if len(carried) == len(problem.pools[b].queries):  # every node of b its own restriction
        column, b_parts = None, opts_b
    else:  # b node -> its distinct restriction (its blocks that hold the terms' queries: all they read)
        distinct: dict = {}
        column = [distinct.setdefault(key, len(distinct)) for key in _carried_blocks(opts_b, carried, indexes_b)]
        b_parts = [(key,) for key in distinct] if len(carried) == 1 else [distinct_blocks(key) for key in distinct]
    if len(tables) == 1 and len(opts_b) == 1:  # one term into one node (a fork to a one-query pool)
        return _rows_into_one_node(tables[0], opts_a, indexes_a, keys_a, b_parts[0], deadline)
    b_sides = [[t.side_b(part) for part in b_parts] for t in tables]
    if len(tables) == 1 and tables[0].single is not None:  # a fork to one query: read its block only
        table, sides_b = tables[0], b_sides[0]

        def weights(i: int) -> list[Cost | None]:
            block = table.single_block(opts_a[i], indexes_a[i])
            return [table.single_weight(block, sb) for sb in sides_b]
    elif len(tables) == 1:  # the usual case: one term, its weight function called directly
        # (as a method of the table, not bound once to a local: compiled, that call is a native one)
        table, sides_b = tables[0], b_sides[0]

        def weights(i: int) -> list[Cost | None]:
            sa = table.side_a(opts_a[i], indexes_a[i])
            return [table.weight(sa, sb) for sb in sides_b]
    else:
        def weights(i: int) -> list[Cost | None]:
            return _weights(tables, [t.side_a(opts_a[i], indexes_a[i]) for t in tables], b_sides)
    rows: dict = {}
    row_of = []  # each node of a's row
    for i, key in enumerate(keys_a):
        row = rows.get(key)
        if row is None:
            check_deadline(deadline)  # per row: an exhaustive table can hold millions of pairs
            row = rows[key] = _row(weights(i), column)
        row_of.append(row)
    return EdgeTable(row_of)


def _rows_into_one_node(table: TermTable, opts_a: list[Option], indexes_a: list[dict[str, int]], keys_a: list,
                        part_b, deadline: float | None) -> EdgeTable:
    """:func:`edge_table` of one term whose pool b holds one node (``part_b``: that node, or its blocks
    the term reads): each row is ``[(0, w)]``, or empty where the node is not derivable.

    Why a path of its own: on the published workloads two thirds of the pools hold one query, hence one
    node, and most are entered by a fork from a pool of 3 to 37 nodes (kleeneRatio workload_5: 98 of the
    179 tables, about 2 of the 4.6 ms of edge tables); skipping the general per-row weight lists and
    columns there takes 2 % of the instructions of the whole search (callgrind: 126.3 -> 123.8 M)."""
    side_b = table.side_b(part_b)
    rows: dict = {}
    row_of = []  # each node of a's row
    for i, key in enumerate(keys_a):
        row = rows.get(key)
        if row is None:
            check_deadline(deadline)
            if table.single is None:
                w = table.weight(table.side_a(opts_a[i], indexes_a[i]), side_b)
            else:  # a fork to one query: read its block only
                w = table.single_weight(table.single_block(opts_a[i], indexes_a[i]), side_b)
            row = rows[key] = [] if w is None else [(0, w)]
        row_of.append(row)
    return EdgeTable(row_of)


def _row(weights: list[Cost | None], column: list[int] | None) -> Row:
    """A node of a's row from its weights to the distinct restrictions of b (None: not derivable);
    ``column``: each node of b's restriction (None when each node is its own)."""
    if column is not None:
        return [(j, w) for j, c in enumerate(column) if (w := weights[c]) is not None]
    if None in weights:
        return [(j, w) for j, w in enumerate(weights) if w is not None]
    return list(enumerate(cast(list[Cost], weights)))


def complete_edges(graph: CandidateGraph, deadline: float | None = None) -> None:
    """Fill unary weights and every allowed pair of the graph's options (:class:`BuildTimeout` past
    ``deadline``)."""
    problem = graph.problem
    fill_unary(graph)
    graph.allowed = {(a, b): edge_table(problem, a, b, graph.options[a], graph.options[b], deadline)
                     for (a, b) in problem.edges}


class PoolGraph(Protocol):
    """What :func:`pool_graph_is_forest` reads of a problem: a :class:`GloriaProblem`, or any object with
    these two attributes (a Protocol: compiled code checks the type of an argument annotated with a class)."""

    @property
    def pools(self) -> Sized: ...

    @property
    def edges(self) -> Iterable[tuple[int, int]]: ...


def pool_graph_is_forest(problem: PoolGraph) -> bool:
    """Is the undirected pool graph (pools adjacent when they share a pair term) a forest (§4.3)?"""
    root = list(range(len(problem.pools)))  # union-find: an edge inside one tree closes a cycle
    for a, b in {(a, b) if a < b else (b, a) for a, b in problem.edges}:  # undirected, each pair once
        ra, rb = _find(root, a), _find(root, b)
        if ra == rb:
            return False
        root[ra] = rb
    return True


def _find(root: list[int], p: int) -> int:
    """The root of p's tree (union-find with path halving)."""
    while root[p] != p:
        root[p] = root[root[p]]
        p = root[p]
    return p
