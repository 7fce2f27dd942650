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

from cepopt.clock import now
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
                 per_component: bool = False, deadline: float | None = None
                 ) -> tuple[set[int], list[int], list[int], dict]:
    """Alg. 2: returns (remaining vertices, F in the order found, pruned vertices, stats).

    Every prefix of the reduction is sound (each removal is justified on its own), so at ``deadline``
    (a ``now()`` value) it stops where it is and says so (stats ``stopped``)."""
    if mode not in MODES:
        raise CepoptError(f"reduction mode must be one of {', '.join(MODES)}, got {mode!r}")
    alive = set(range(len(graph)) if indices is None else indices)
    if per_component:
        remaining: set[int] = set()
        free: list[int] = []
        pruned: list[int] = []
        passes = 0
        stopped = None
        for comp in graph.components(alive):
            if stopped:
                remaining |= set(comp)
                continue
            r, f, p, st = reduce_graph(graph, comp, mode=mode, deadline=deadline)
            remaining |= r
            free += f
            pruned += p
            passes = max(passes, st["passes"])
            stopped = st.get("stopped")
        out = {"passes": passes, "bound": None}
        if stopped:
            out["stopped"] = stopped
        return remaining, free, pruned, out
    if mode == "recompute":
        return _recompute(graph, alive, deadline)
    return _single_bound(graph, alive, mode, deadline)


def _over(deadline: float | None) -> bool:
    return deadline is not None and now() > deadline


def _single_bound(graph: SharonGraph, alive: set[int], mode: str, deadline):
    """"paper" and "literal": one bound (GWMIN's guarantee on the input graph); Score_max kept from running
    totals (the alive weight, and F's for "paper"), so a pass costs the sum of the degrees."""
    w = [v.weight for v in graph.vertices]
    adj = graph.adj
    free: list[int] = []
    pruned: list[int] = []
    bound = guaranteed_weight(graph, alive)
    alive_total = sum((w[i] for i in alive), 0)
    free_total = 0
    passes = 0
    changed = True
    stats: dict = {}
    while changed:
        changed = False
        passes += 1
        for i in sorted(alive):
            if _over(deadline):
                stats["stopped"] = "time limit"
                changed = False
                break
            if i not in alive:
                continue
            near = adj[i] & alive
            if not near:
                alive.discard(i)
                alive_total -= w[i]
                free.append(i)
                free_total += w[i]
                changed = True
                continue
            extra = free_total if mode == "paper" else 0
            if alive_total - sum((w[j] for j in near), 0) + extra < bound:
                alive.discard(i)
                alive_total -= w[i]
                pruned.append(i)
                changed = True
    return alive, free, pruned, {"passes": passes, "bound": float(bound), **stats}


def _recompute(graph: SharonGraph, alive: set[int], deadline):
    """"recompute": every pass recomputes min and Score_max on the current graph without F (sound, since
    the current graph's optimum plus F is the optimum); classify every vertex, then remove."""
    free: list[int] = []
    pruned: list[int] = []
    first_bound = bound = guaranteed_weight(graph, alive)
    passes = 0
    changed = True
    stats: dict = {}
    while changed:
        if _over(deadline):
            stats["stopped"] = "time limit"
            break
        passes += 1
        bound = guaranteed_weight(graph, alive)
        f_now = [i for i in sorted(alive) if not (graph.adj[i] & alive)]
        ridden = [i for i in sorted(alive) if graph.adj[i] & alive and score_max(graph, i, alive) < bound]
        for i in f_now + ridden:
            alive.discard(i)
        free += f_now
        pruned += ridden
        changed = bool(f_now or ridden)
    return alive, free, pruned, {"passes": passes, "bound": float(first_bound), **stats}
