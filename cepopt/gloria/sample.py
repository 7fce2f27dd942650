"""Random valid Gloria plans: one node per pool, every adjacent pair derivable (spec §3.1).

A randomized depth-first search over a candidate graph in the pools' topological order, with
backtracking when a pool has no node compatible with the nodes already chosen. Used to execute plans
of every quality, not only the optimizers' near-optimal ones, when checking that the cost model
ranks plans as execution does.
"""

from __future__ import annotations

import random

from cepopt.gloria.graph import CandidateGraph
from cepopt.gloria.plan import GloriaPlan

__all__ = ["random_choice", "random_plans"]


def random_choice(graph: CandidateGraph, rng: random.Random, *, max_steps: int = 100_000) -> list[int] | None:
    """One random valid choice of node per pool, or None (no valid choice found within ``max_steps``)."""
    problem = graph.problem
    if problem.order is None:
        return None
    order = problem.order
    pos = {p: k for k, p in enumerate(order)}
    preds = {b: [a for a in problem.preds.get(b, []) if pos[a] < pos[b]] for b in order}
    choice = [-1] * len(problem.pools)
    steps = [0]

    def dfs(k: int) -> bool:
        if k == len(order):
            return True
        steps[0] += 1
        if steps[0] > max_steps:
            return False
        b = order[k]
        js = list(range(len(graph.options[b])))
        rng.shuffle(js)
        for j in js:
            if all((choice[a], j) in graph.allowed[(a, b)] for a in preds[b]):
                choice[b] = j
                if dfs(k + 1):
                    return True
        choice[b] = -1
        return False

    return list(choice) if dfs(0) else None


def random_plans(graph: CandidateGraph, count: int, *, seed: int = 0) -> list[GloriaPlan]:
    """Up to ``count`` distinct random valid plans of ``graph``."""
    rng = random.Random(seed)
    seen: set[tuple[int, ...]] = set()
    plans = []
    for _ in range(4 * count):
        choice = random_choice(graph, rng)
        if choice is None:
            break
        if tuple(choice) not in seen:
            seen.add(tuple(choice))
            plans.append(graph.plan(choice))
        if len(plans) == count:
            break
    return plans
