"""Graph reduction (§5, Alg. 2) with the SOUND readings of spec §4.

Rules: R2 removes a *conflict-ridden* vertex v, i.e. Score_max(v) < min, where min is GWMIN's
guaranteed weight (Eq. 10) and Score_max(v) = weight of the vertices not adjacent to v, v included
(Eq. 11); R3 moves a conflict-free vertex (degree 0) to F. Passes repeat until nothing changes; the
vertex order is the graph's order (spec B2).

Modes:

* ``"paper"`` (default): min computed once on the input graph; Score_max(v) counts the current graph
  AND F. Sound: Lemma 2 holds because every plan containing v is inside (V_cur ∪ F) minus N(v).
* ``"recompute"``: every pass recomputes min and Score_max on the current graph without F (sound,
  since the current graph's optimum plus F is the optimum).
* ``"literal"``: Alg. 2 read literally, fixed min and Score_max on the shrinking graph without F.
  UNSOUND: on Fig. 4 it returns F = {p5, p6, p7}, score 46 < 50. Kept only for the regression test.

``per_component`` runs the reduction on each connected component (MWIS decomposes over components).
"""

from __future__ import annotations

from collections.abc import Iterable

from cepopt.errors import CepoptError
from cepopt.sharon.graph import SharonGraph
from cepopt.sharon.gwmin import guaranteed_weight

__all__ = ["reduce_graph", "score_max", "MODES"]

MODES = ("paper", "recompute", "literal")


def score_max(graph: SharonGraph, i: int, alive: set[int], extra: float = 0):
    """Eq. 11 on the subgraph ``alive``: sum of weights of alive vertices not adjacent to i (i counted)."""
    total = sum(graph.vertices[j].weight for j in alive)
    return total - sum(graph.vertices[j].weight for j in graph.adj[i] & alive) + extra


def reduce_graph(graph: SharonGraph, indices: Iterable[int] | None = None, *, mode: str = "paper",
                 per_component: bool = False) -> tuple[set[int], list[int], list[int], dict]:
    """Alg. 2: returns (remaining vertices, F in the order found, pruned vertices, stats)."""
    if mode not in MODES:
        raise CepoptError(f"reduction mode must be one of {', '.join(MODES)}, got {mode!r}")
    alive = set(range(len(graph)) if indices is None else indices)
    if per_component:
        remaining: set[int] = set()
        free: list[int] = []
        pruned: list[int] = []
        passes = 0
        for comp in graph.components(alive):
            r, f, p, st = reduce_graph(graph, comp, mode=mode)
            remaining |= r
            free += f
            pruned += p
            passes = max(passes, st["passes"])
        return remaining, free, pruned, {"passes": passes, "bound": None}
    free = []
    pruned = []
    bound = guaranteed_weight(graph, alive)
    first_bound = bound
    passes = 0
    changed = True
    while changed:
        changed = False
        passes += 1
        if mode == "recompute":
            bound = guaranteed_weight(graph, alive)
            # classify every vertex with this pass's bound and Score_max, then remove
            f_now = [i for i in sorted(alive) if not (graph.adj[i] & alive)]
            ridden = [i for i in sorted(alive) if graph.adj[i] & alive and score_max(graph, i, alive) < bound]
            for i in f_now + ridden:
                alive.discard(i)
            free += f_now
            pruned += ridden
            changed = bool(f_now or ridden)
            continue
        for i in sorted(alive):
            if i not in alive:
                continue
            if not (graph.adj[i] & alive):
                alive.discard(i)
                free.append(i)
                changed = True
                continue
            extra = graph.weight_of(free) if mode == "paper" else 0
            if score_max(graph, i, alive, extra) < bound:
                alive.discard(i)
                pruned.append(i)
                changed = True
    return alive, free, pruned, {"passes": passes, "bound": float(first_bound)}
