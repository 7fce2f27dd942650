"""Brute-force matching of simple join patterns: the oracle of the Spark join executor.

Plain Python over a small pandas stream (columns id, ts, type and attributes). It enumerates the
assignments of any leaf set by backtracking and checks every constraint literally, so it shares
nothing with the Spark evaluator but the compiled pattern (executor/join_plan.py). Use it on small
inputs only: Kleene items enumerate every subset.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import pandas as pd

from cepopt.errors import CepoptError
from cepopt.executor.join_plan import CompiledPattern, JoinTree, Node, compile_query
from cepopt.model import Query
from cepopt.predicates import compare

__all__ = ["match_text", "node_counts", "partial_matches", "reference_matches"]

# A value is one event (a dict) or, for a Kleene item, a tuple of events sorted by (ts, id).


def _elems(v) -> tuple:
    return v if isinstance(v, tuple) else (v,)


def _lo(v) -> float:
    return min(e["ts"] for e in _elems(v))


def _hi(v) -> float:
    return max(e["ts"] for e in _elems(v))


def _check(c, va, vb) -> bool:
    """Whether the pair check ``c`` holds for value ``va`` of item c.a and ``vb`` of item c.b."""
    if c.kind in ("cond", "equiv"):
        return all(compare(c.op, x[c.attr], y[c.battr]) for x in _elems(va) for y in _elems(vb))
    if c.kind == "order":
        return _hi(va) <= _lo(vb)
    if c.kind == "distinct":
        return not ({e["id"] for e in _elems(va)} & {e["id"] for e in _elems(vb)})
    raise AssertionError(c.kind)


def _events(events: pd.DataFrame) -> list[dict]:
    if "id" not in events.columns:
        events = events.assign(id=range(len(events)))
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
            for row in events.to_dict("records")]


class _Matcher:
    def __init__(self, pattern: CompiledPattern, events: pd.DataFrame, max_subsets: int = 200_000):
        self.p = pattern
        rows = _events(events)
        self.candidates: dict[int, list] = {}
        for item in pattern.items:
            ok = [e for e in rows if e["type"] == item.type
                  and all(compare(f.op, e[f.attr], f.value) for f in pattern.filters_of(item.position))]
            ok.sort(key=lambda e: (e["ts"], e["id"]))
            self.candidates[item.position] = self._subsets(ok, max_subsets) if item.kleene else ok

    def _subsets(self, rows: list[dict], limit: int) -> list[tuple]:
        out: list[tuple] = []
        w = self.p.window
        for i, first in enumerate(rows):
            later = [e for e in rows[i + 1:] if e["ts"] - first["ts"] <= w]
            for k in range(len(later) + 1):
                for rest in combinations(later, k):
                    # the events of a set are equal on every equivalence attribute (not on a missing value)
                    if all(compare("=", e[a], first[a]) for a in self.p.equivalences for e in rest):
                        out.append((first, *rest))
                        if len(out) > limit:
                            raise CepoptError("too many Kleene subsets for the brute-force matcher")
        return out

    def _ok_with(self, pos: int, value, assigned: dict[int, object]) -> bool:
        for c in self.p.checks:
            if c.a == pos and c.b in assigned:
                if not _check(c, value, assigned[c.b]):
                    return False
            elif c.b == pos and c.a in assigned:
                if not _check(c, assigned[c.a], value):
                    return False
        return True

    def _rejected(self, assigned: dict[int, object], negations: Sequence[int], lo: float, hi: float) -> bool:
        for pos in negations:
            for n in self.candidates[pos]:
                if max(hi, n["ts"]) - min(lo, n["ts"]) <= self.p.window and self._ok_with(pos, n, assigned):
                    return True
        return False

    def enumerate(self, leaves: frozenset[int], negations: Sequence[int] | None = None):
        """Every assignment (dict item position -> value) of ``leaves`` that is a partial match:
        it passes every check among ``leaves`` and is rejected by none of ``negations`` (default:
        the negations whose dependencies lie in ``leaves``)."""
        positions = [self.p.leaves[i] for i in sorted(leaves)]
        if negations is None:
            negations = self.p.negations_within(frozenset(leaves))
        w = self.p.window
        assigned: dict[int, object] = {}

        def rec(k: int, lo: float, hi: float):
            if k == len(positions):
                if not self._rejected(assigned, negations, lo, hi):
                    yield dict(assigned)
                return
            pos = positions[k]
            for v in self.candidates[pos]:
                nlo, nhi = min(lo, _lo(v)), max(hi, _hi(v))
                if nhi - nlo > w or not self._ok_with(pos, v, assigned):
                    continue
                assigned[pos] = v
                yield from rec(k + 1, nlo, nhi)
                del assigned[pos]

        yield from rec(0, float("inf"), float("-inf"))


def match_text(pattern: CompiledPattern, assignment: dict[int, object]) -> str:
    """The canonical text of a match: ``ref=id`` per positive item in pattern order; a Kleene item
    gives ``ref=[id;id;...]`` with its ids ascending."""
    parts = []
    for pos in pattern.leaves:
        v = assignment[pos]
        ref = pattern.items[pos].ref
        if isinstance(v, tuple):
            parts.append(f"{ref}=[{';'.join(str(i) for i in sorted(e['id'] for e in v))}]")
        else:
            parts.append(f"{ref}={v['id']}")
    return ",".join(parts)


def _compiled(query) -> CompiledPattern:
    return query if isinstance(query, CompiledPattern) else compile_query(query)


def reference_matches(query: Query | CompiledPattern, events: pd.DataFrame) -> list[str]:
    """The sorted match texts of ``query`` on a small pandas stream, by enumeration."""
    p = _compiled(query)
    m = _Matcher(p, events)
    return sorted(match_text(p, a) for a in m.enumerate(frozenset(range(p.n))))


def partial_matches(query: Query | CompiledPattern, events: pd.DataFrame, leaves: Sequence[int]) -> int:
    """The number of partial matches of the leaf set ``leaves``, by enumeration."""
    p = _compiled(query)
    return sum(1 for _ in _Matcher(p, events).enumerate(frozenset(leaves)))


def _subtree_negations(node: Node) -> tuple[int, ...]:
    kids = () if node.leaf is not None else (node.left, node.right)
    return tuple(sorted(set(node.negations).union(*(_subtree_negations(k) for k in kids))))


def node_counts(tree: JoinTree, events: pd.DataFrame, *, negate: bool = True, lifetime: bool = False) -> list:
    """Partial matches of every node of ``tree`` (in ``tree.nodes`` order), by enumeration: the
    assignments of the node's leaves that pass their checks and the negations placed in its subtree.
    ``negate=False`` counts the positive part (no NOT check anywhere); ``lifetime=True`` gives
    (count, Σ (W - (last - first))) per node, the lifetimes the Spark evaluator's ``active`` sums."""
    m = _Matcher(tree.pattern, events)
    cache: dict[tuple, object] = {}
    out = []
    for node in tree.nodes:
        key = (node.leaves, _subtree_negations(node) if negate else ())
        if key not in cache:
            spans = [max(_hi(v) for v in a.values()) - min(_lo(v) for v in a.values()) for a in m.enumerate(*key)]
            cache[key] = (len(spans), sum(tree.pattern.window - s for s in spans)) if lifetime else len(spans)
        out.append(cache[key])
    return out
