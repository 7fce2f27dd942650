"""The Sharon graph (§4, Def. 10, Alg. 1) and sharing conflicts (Def. 6, spec §3.1).

Vertices are sharing candidates (p, Q') with weight BValue(p, Q') > 0; an edge joins two candidates in
conflict. Conflict (our implementable reading of Def. 6, spec §3.1 / A6): the two candidates have a
query q in common and their position intervals in q intersect (suffix/prefix overlap, containment at
either end or in the middle, and the same pattern twice).

Conflict is therefore "cover a common cell (q, position)", so the edge set is the union of one clique
per cell. The graph keeps these cells (they give the MWIS models their clique constraints) and builds
the adjacency lists from them only when an algorithm asks (Alg. 1 without its pairwise scan).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cepopt.clock import check

__all__ = ["Vertex", "SharonGraph", "conflict", "MAX_ADJACENCY_PAIRS"]

MAX_ADJACENCY_PAIRS = 40_000_000


@dataclass(frozen=True)
class Vertex:
    """A sharing candidate (p, Q') with its weight BValue(p, Q'); ``cls`` is its sharing class."""

    pattern: tuple[str, ...]
    queries: frozenset[str]
    weight: float
    cls: int = 0

    @property
    def key(self) -> tuple:
        """Total order of candidates (spec §5.3): pattern, then sorted query names, then class."""
        return (self.pattern, tuple(sorted(self.queries)), self.cls)

    def label(self) -> str:
        return f"({','.join(self.pattern)}: {','.join(sorted(self.queries))})"


def conflict(u: Vertex, v: Vertex, starts: Mapping[str, Mapping[tuple[str, ...], int]]) -> bool:
    """Def. 6 (spec §3.1): some common query in which the two occurrences overlap."""
    for q in u.queries & v.queries:
        su, sv = starts[q][u.pattern], starts[q][v.pattern]
        if su < sv + len(v.pattern) and sv < su + len(u.pattern):
            return True
    return False


@dataclass
class SharonGraph:
    """Undirected vertex-weighted conflict graph. ``starts[q][p]`` is p's start position in q."""

    vertices: list[Vertex]
    starts: Mapping[str, Mapping[tuple[str, ...], int]]
    _adj: list[set[int]] | None = field(default=None, repr=False)
    _cells: dict | None = field(default=None, repr=False)
    _cliques: list | None = field(default=None, repr=False)

    @classmethod
    def build(cls, vertices: Iterable[Vertex], starts: Mapping[str, Mapping[tuple[str, ...], int]]
              ) -> SharonGraph:
        """Alg. 1: the graph over the given (already beneficial) candidates."""
        return cls(list(vertices), starts)

    def __len__(self) -> int:
        return len(self.vertices)

    def induced(self, keep: Sequence[int]) -> SharonGraph:
        """The subgraph on the vertices ``keep`` (renumbered in that order). Its cliques come from
        this graph's, restricted (a restricted clique may lie inside another: a redundant row, never
        a missing edge), instead of being recomputed from the cells."""
        new = {old: i for i, old in enumerate(keep)}
        sub = SharonGraph([self.vertices[i] for i in keep], self.starts)
        restricted = {tuple(sorted(new[i] for i in clique if i in new)) for clique in self.cliques()}
        sub._cliques = sorted((c for c in restricted if len(c) > 1), key=lambda c: (c[0], len(c), c))
        return sub

    @property
    def weights(self) -> list[float]:
        return [v.weight for v in self.vertices]

    def prepare(self, deadline: float | None = None) -> None:
        """Build the cells and the cell cliques now, stopped at ``deadline`` (a :func:`cepopt.clock.now`
        value; :class:`~cepopt.clock.TimeLimitReached`): on an expanded graph they take seconds, and a
        method with a time limit must be able to stop in them."""
        self._build_cells(deadline)
        if self._cliques is None:
            self._cliques = self._cell_cliques(deadline)

    @property
    def cells(self) -> dict[tuple[str, int], list[int]]:
        """(query, position) -> vertices whose pattern covers that position of that query."""
        return self._build_cells(None)

    def _build_cells(self, deadline: float | None) -> dict[tuple[str, int], list[int]]:
        if self._cells is None:
            cells: dict[tuple[str, int], list[int]] = defaultdict(list)
            for i, v in enumerate(self.vertices):
                if i % 1024 == 0:
                    check(deadline, "building the graph's cells")
                for q in v.queries:
                    s = self.starts[q][v.pattern]
                    for pos in range(s, s + len(v.pattern)):
                        cells[(q, pos)].append(i)
            self._cells = dict(cells)
        return self._cells

    def cliques(self) -> list[tuple[int, ...]]:
        """Distinct maximal-per-query cell cliques of size >= 2; their pairs are exactly the edges."""
        if self._cliques is None:
            self._cliques = self._cell_cliques()
        return list(self._cliques)

    def _cell_cliques(self, deadline: float | None = None) -> list[tuple[int, ...]]:
        by_query: dict[str, list[frozenset[int]]] = defaultdict(list)
        for (q, _), members in self._build_cells(deadline).items():
            if len(members) > 1:
                by_query[q].append(frozenset(members))
        out: set[frozenset[int]] = set()
        for k, sets in enumerate(by_query.values()):
            if k % 64 == 0:
                check(deadline, "building the graph's cliques")
            uniq = set(sets)
            for s in uniq:
                if not any(s < t for t in uniq):
                    out.add(s)
        return sorted((tuple(sorted(s)) for s in out), key=lambda c: (c[0], len(c), c))

    @property
    def adj(self) -> list[set[int]]:
        """Adjacency sets (built once from the cell cliques)."""
        if self._adj is None:
            from cepopt.errors import MethodLimitError

            cliques = self.cliques()
            pairs = sum(len(c) * (len(c) - 1) for c in cliques)
            if pairs > MAX_ADJACENCY_PAIRS:
                raise MethodLimitError(f"the graph's cliques hold {pairs} vertex pairs (> {MAX_ADJACENCY_PAIRS}): "
                                       "too dense for adjacency lists; use the compact models (cpsat-compact, "
                                       "milp-compact)")
            adj: list[set[int]] = [set() for _ in self.vertices]
            for clique in cliques:
                for i in clique:
                    adj[i].update(clique)
            for i, s in enumerate(adj):
                s.discard(i)
            self._adj = adj
        return self._adj

    def edges(self) -> list[tuple[int, int]]:
        return [(i, j) for i, s in enumerate(self.adj) for j in sorted(s) if i < j]

    def degree(self, i: int) -> int:
        return len(self.adj[i])

    def is_independent(self, indices: Sequence[int]) -> bool:
        chosen = set(indices)
        return all(not (self.adj[i] & chosen) for i in chosen)

    def weight_of(self, indices: Iterable[int]) -> float:
        return sum((self.vertices[i].weight for i in indices), 0)

    def cover_bound(self):
        """An upper bound on the MWIS weight, in the weights' own arithmetic: the cell cliques, largest
        first, each take the vertices no earlier clique took; an independent set holds at most one vertex
        of each such group, so the sum of the groups' largest positive weights bounds it."""
        w = [v.weight for v in self.vertices]
        taken = [False] * len(w)
        total = 0
        for clique in sorted(self.cliques(), key=len, reverse=True):
            members = [i for i in clique if not taken[i]]
            if members:
                total += max(max(w[i] for i in members), 0)
                for i in members:
                    taken[i] = True
        return total + sum((x for x, t in zip(w, taken, strict=True) if not t and x > 0), 0)

    def components(self, indices: Iterable[int] | None = None) -> list[list[int]]:
        """Connected components of the subgraph induced by ``indices`` (all vertices by default)."""
        alive = set(range(len(self.vertices)) if indices is None else indices)
        seen: set[int] = set()
        out = []
        for start in sorted(alive):
            if start in seen:
                continue
            comp, stack = [], [start]
            seen.add(start)
            while stack:
                i = stack.pop()
                comp.append(i)
                for j in self.adj[i]:
                    if j in alive and j not in seen:
                        seen.add(j)
                        stack.append(j)
            out.append(sorted(comp))
        return out
