"""The Sharon sharing plan (Def. 7): which queries share the aggregation of which pattern.

A :class:`SharonPlan` is a set of sharing candidates ``(pattern, queries)``:

* ``pattern`` is a tuple of event-type names, length >= 2, a contiguous sub-pattern (substring) of the
  SEQ pattern of every query in ``queries`` (Def. 3);
* ``queries`` is a frozenset of query names (>= 2 of them) that compute the aggregates of ``pattern``
  once, in one shared instance, and combine them with their private prefix/suffix segments
  (§3.3, spec §7.4).

The empty plan is the Non-Shared method (A-Seq): every query is evaluated on its own.

Guarantees the executor may rely on (the optimizer only returns such plans, and the cost model
:meth:`cepopt.sharon.problem.SharonProblem.score` rejects any other plan with a
:class:`~cepopt.errors.CepoptError`):

* ``pattern`` occurs exactly once in each query of ``queries`` (a sub-pattern that occurs twice in a
  query, possible when the query repeats an event type, is never shared by that query; spec §6.3,
  our decision), so its position in the query is unambiguous: :meth:`SharonPlan.position`;
* the plan is valid (Def. 6, spec §3.1): two entries that have a query in common do not overlap in it.
  A query may share several non-overlapping patterns (q4 sharing p2 and p4 in Fig. 4).
* The same pattern may appear in two entries with disjoint query sets (two options of one pattern,
  §7.1): they are two separate shared instances.

Entries are sorted canonically (pattern, then sorted query names), so equal plans compare equal and
serialise identically. JSON form: ``[{"pattern": ["A", "B"], "queries": ["q1", "q2"]}, ...]``.

>>> plan = SharonPlan.of([(("B", "C"), {"q2", "q1"}), (("A", "B"), ["q3", "q4"])])
>>> pattern, queries = plan.shared[0]
>>> pattern, sorted(queries)
(('A', 'B'), ['q3', 'q4'])
>>> plan.for_query("q1")
(('B', 'C'),)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cepopt.errors import CepoptError

__all__ = ["SharonPlan", "Entry"]

Entry = tuple[tuple[str, ...], frozenset[str]]


def _key(entry: Entry) -> tuple:
    return (entry[0], tuple(sorted(entry[1])))


@dataclass(frozen=True)
class SharonPlan:
    """A sharing plan: a canonically sorted tuple of ``(pattern, frozenset of query names)``."""

    shared: tuple[Entry, ...] = ()

    def __post_init__(self) -> None:
        entries = []
        for item in self.shared:
            try:
                pattern, queries = item
            except (TypeError, ValueError):
                raise CepoptError(f"plan entry must be (pattern, queries), got {item!r}") from None
            if isinstance(pattern, str) or isinstance(queries, str):
                raise CepoptError(f"plan entry must be (tuple of types, set of query names), got {item!r}")
            entries.append((tuple(pattern), frozenset(queries)))
        entries.sort(key=_key)
        keys = [_key(e) for e in entries]
        if len(keys) != len(set(keys)):
            raise CepoptError("plan lists the same (pattern, queries) entry twice")
        object.__setattr__(self, "shared", tuple(entries))

    @classmethod
    def of(cls, entries: Iterable[tuple[Sequence[str], Iterable[str]]]) -> SharonPlan:
        """Build a plan from any iterable of (pattern, queries)."""
        return cls(tuple((tuple(p), frozenset(q)) for p, q in entries))

    @classmethod
    def empty(cls) -> SharonPlan:
        """The Non-Shared plan (A-Seq for every query)."""
        return cls(())

    def __len__(self) -> int:
        return len(self.shared)

    def __iter__(self):
        return iter(self.shared)

    def __bool__(self) -> bool:
        return bool(self.shared)

    def for_query(self, name: str) -> tuple[tuple[str, ...], ...]:
        """The patterns query ``name`` shares, in canonical order (not in position order)."""
        return tuple(p for p, qs in self.shared if name in qs)

    @staticmethod
    def position(query_types: Sequence[str], pattern: Sequence[str]) -> int:
        """Start index (0-based) of ``pattern`` in a query's type sequence; it occurs exactly once in
        any query that shares it."""
        n, m = len(query_types), len(pattern)
        hits = [s for s in range(n - m + 1) if tuple(query_types[s:s + m]) == tuple(pattern)]
        if len(hits) != 1:
            raise CepoptError(f"pattern {','.join(pattern)} occurs {len(hits)} times in the query, "
                              "a shared pattern must occur exactly once")
        return hits[0]

    def segments(self, name: str, query_types: Sequence[str]
                 ) -> list[tuple[int, int, tuple[str, ...] | None]]:
        """Query ``name`` split into maximal segments: ``(start, end_exclusive, shared pattern or
        None for a private segment)``, in position order (spec §7.4)."""
        spans = sorted((self.position(query_types, p), p) for p in self.for_query(name))
        out: list[tuple[int, int, tuple[str, ...] | None]] = []
        cur = 0
        for start, pattern in spans:
            if start < cur:
                raise CepoptError(f"plan is invalid: two shared patterns overlap in query {name!r}")
            if start > cur:
                out.append((cur, start, None))
            out.append((start, start + len(pattern), pattern))
            cur = start + len(pattern)
        if cur < len(query_types):
            out.append((cur, len(query_types), None))
        return out

    def to_json(self) -> list[dict[str, Any]]:
        return [{"pattern": list(p), "queries": sorted(qs)} for p, qs in self.shared]

    @classmethod
    def from_json(cls, value: Any) -> SharonPlan:
        if isinstance(value, dict) and "shared" in value:
            value = value["shared"]
        if not isinstance(value, list):
            raise CepoptError(f"sharon plan: expected a list of {{pattern, queries}}, got {value!r}")
        entries = []
        for i, item in enumerate(value):
            if not isinstance(item, dict) or set(item) - {"pattern", "queries", "weight"} or \
                    "pattern" not in item or "queries" not in item:
                raise CepoptError(f"sharon plan[{i}]: expected {{\"pattern\": [...], \"queries\": [...]}}")
            pattern, queries = item["pattern"], item["queries"]
            if isinstance(pattern, str):
                pattern = [t.strip() for t in pattern.split(",")]
            if not isinstance(pattern, list) or not all(isinstance(t, str) for t in pattern) or \
                    not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
                raise CepoptError(f"sharon plan[{i}]: pattern and queries must be lists of names")
            entries.append((tuple(pattern), frozenset(queries)))
        return cls(tuple(entries))

    def __str__(self) -> str:
        if not self.shared:
            return "{} (non-shared)"
        return "{" + ", ".join(f"({','.join(p)}: {','.join(sorted(qs))})" for p, qs in self.shared) + "}"
